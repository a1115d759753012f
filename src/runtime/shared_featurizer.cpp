// Featurizers shared by models (PRETZEL): per-tenant models trained alike over one fitted
// ColumnTransformer compile to programs whose featurize() is the same source over buffers of
// the same contents. A backend keeps one copy of those buffers, found by a hash of the source
// and the contents and confirmed byte for byte (a hash collision never shares), and the
// PredictBatch node runs featurize() once for a batch's rows of all such models.
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "loaded_module.hpp"

namespace pg_predict::runtime {

struct SharedFeaturizer {
    size_t hash = 0;
    std::string source;
    std::vector<std::string> names;
    std::vector<at::Tensor> tensors;  // the one copy, held by every sharing module too
    size_t bytes = 0;
    int refs = 0;
};

namespace {

std::unordered_multimap<size_t, SharedFeaturizer*>& featurizers() {
    static std::unordered_multimap<size_t, SharedFeaturizer*> by_hash;
    return by_hash;
}

std::vector<std::string> split_names(const std::string& list) {
    std::vector<std::string> names;
    size_t start = 0;
    while (start < list.size()) {
        size_t end = list.find(',', start);
        if (end == std::string::npos) end = list.size();
        names.push_back(list.substr(start, end - start));
        start = end + 1;
    }
    return names;
}

std::string_view contents(const at::Tensor& t) {
    return {static_cast<const char*>(t.data_ptr()), static_cast<size_t>(t.nbytes())};
}

size_t content_hash(const std::string& source, const std::vector<at::Tensor>& tensors) {
    size_t h = std::hash<std::string>()(source);
    auto mix = [&h](size_t v) { h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2); };
    for (const at::Tensor& t : tensors) {
        mix(static_cast<size_t>(t.scalar_type()));
        for (int64_t d : t.sizes()) mix(static_cast<size_t>(d));
        mix(std::hash<std::string_view>()(contents(t)));
    }
    return h;
}

bool same(const SharedFeaturizer& f, const std::string& source, const std::vector<std::string>& names,
          const std::vector<at::Tensor>& tensors) {
    if (f.source != source || f.names != names) return false;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const at::Tensor &a = f.tensors[i], &b = tensors[i];
        if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes() || contents(a) != contents(b)) return false;
    }
    return true;
}

}  // namespace

SharedFeaturizer* share_featurizer(torch::jit::Module& module, size_t* shared_bytes) {
    *shared_bytes = 0;
    if (!module.hasattr("featurizer_source") || !module.hasattr("featurizer_buffers") ||
        !module.find_method("featurize") || !module.find_method("from_features"))
        return nullptr;
    const std::string source = module.attr("featurizer_source").toStringRef();
    const std::vector<std::string> names = split_names(module.attr("featurizer_buffers").toStringRef());
    std::vector<at::Tensor> tensors;
    size_t bytes = 0;
    for (const std::string& name : names) {
        if (!module.hasattr(name)) return nullptr;
        at::Tensor t = module.attr(name).toTensor();
        if (!t.device().is_cpu() || !t.is_contiguous()) return nullptr;
        bytes += t.nbytes();
        tensors.push_back(std::move(t));
    }
    const size_t hash = content_hash(source, tensors);
    auto range = featurizers().equal_range(hash);
    for (auto it = range.first; it != range.second; ++it) {
        SharedFeaturizer* f = it->second;
        if (!same(*f, source, names, tensors)) continue;
        for (size_t i = 0; i < names.size(); ++i) module.setattr(names[i], f->tensors[i]);
        ++f->refs;
        *shared_bytes = f->bytes;
        return f;
    }
    auto* f = new SharedFeaturizer{hash, source, names, std::move(tensors), bytes, 1};
    featurizers().emplace(hash, f);
    return f;
}

void unshare_featurizer(SharedFeaturizer* f) noexcept {
    if (--f->refs > 0) return;
    auto range = featurizers().equal_range(f->hash);
    for (auto it = range.first; it != range.second; ++it)
        if (it->second == f) {
            featurizers().erase(it);
            break;
        }
    delete f;
}

}  // namespace pg_predict::runtime
