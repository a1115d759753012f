// A program's native image: what a program that is the native kernel, its base margin and an
// elementwise link (after one bucketize of its inputs, for LightGBM's programs), or a linear
// model fused into one kernel call and its link, needs to score, with no TorchScript module: the packed ensemble's header and
// arrays, the base margin, the link, the inputs without a missing-value rule. One flat block
// addressed by offsets from its start (so any process may map it at any address), each array
// 64-byte aligned as the module's tensors are (the kernels' vector loads). src/pg keeps one
// copy per model version in shared memory; a backend maps it instead of deserializing the
// TorchScript archive (18-24 ms and 4.5 MB per backend for a 100-tree model).
#include <cstring>
#include <string>

#include "pg_predict/common/error.hpp"
#include "program_internal.hpp"

namespace pg_predict::runtime {

namespace {

constexpr char kMagic[8] = {'P', 'G', 'P', 'N', 'I', 'M', 'G', '1'};
constexpr int64_t kAlign = 64;

enum Part { Meta, Nodes, Leaves, Cuts, Aux, Base, Missing, Edges, Counts, Terms, kParts };
constexpr size_t kElement[kParts] = {sizeof(int64_t), sizeof(int32_t), sizeof(float),  sizeof(float),
                                     sizeof(int32_t), sizeof(float),   sizeof(int32_t), sizeof(double),
                                     sizeof(int64_t), sizeof(double)};

struct Header {
    char magic[8];
    int64_t length;  // the whole image
    int64_t num_features;
    int32_t output_width;
    int32_t link;  // spec::PostTransform
    int32_t bucketizes;  // its featurizer is one bucketize (Edges, Counts): 0 or 1
    int32_t bucket_right;
    int64_t bucket_stride;
    int32_t linear;  // a fused linear model (Terms, the intercept) instead of trees: 0 or 1
    int32_t unused;
    double linear_intercept;
    int64_t count[kParts];
    int64_t offset[kParts];
};

int64_t aligned(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

[[noreturn]] void damaged(const std::string& what) {
    fail(ErrorCategory::InvalidModel, "a shared native program image is damaged (" + what + ")");
}

// The links run_one_row applies (one_row_link decides which fit the output).
bool known_link(int32_t link) {
    for (spec::PostTransform t : {spec::PostTransform::Identity, spec::PostTransform::Logistic,
                                  spec::PostTransform::TwoSided, spec::PostTransform::Complement})
        if (link == static_cast<int32_t>(t)) return true;
    return false;
}

}  // namespace

bool program_maps_natively(const Program* p) noexcept {
    if (p != nullptr && p->linear) return p->device == Device::Cpu && p->linear_packed != nullptr;
    if (p == nullptr || p->device != Device::Cpu || p->native_meta == nullptr || p->native_arrays[0] == nullptr ||
        p->base_margin == nullptr ||
        p->native.num_groups != 1)
        return false;
    // The kernel, the base margin and the link; or the same after one bucketize.
    return p->bucketizes ? p->native_rest : program_splits(p) && !p->native_rest && program_featurizer(p) == nullptr;
}

namespace {

// The image's header (its offsets and length) for p; the arrays are p's own.
Header image_header(const Program* p) {
    const kernels::PackedView& v = p->native;
    Header h{};
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.num_features = p->num_features;
    h.output_width = p->output_width;
    h.link = static_cast<int32_t>(p->link);
    if (p->linear) {
        h.linear = 1;
        h.linear_intercept = p->linear_intercept;
        h.count[Terms] = p->linear_count * kernels::kLinearTermFields;
    } else {
        h.count[Meta] = p->native_meta_size;
        h.count[Nodes] = p->native_lengths[0];
        h.count[Leaves] = p->native_lengths[1];
        h.count[Cuts] = p->native_lengths[2];
        h.count[Aux] = p->native_lengths[3];
        h.count[Base] = v.num_groups;
        h.count[Missing] = static_cast<int64_t>(p->missing_inputs.size());
    }
    if (p->bucketizes) {
        h.bucketizes = 1;
        h.bucket_right = p->bucket_right ? 1 : 0;
        h.bucket_stride = p->bucket_stride;
        h.count[Edges] = p->num_features * p->bucket_stride;
        h.count[Counts] = p->num_features;
    }
    int64_t at = aligned(sizeof(Header));
    for (int k = 0; k < kParts; ++k) {
        h.offset[k] = at;
        at = aligned(at + h.count[k] * static_cast<int64_t>(kElement[k]));
    }
    h.length = at;
    return h;
}

}  // namespace

size_t native_image_length(const Program* p) noexcept {
    return program_maps_natively(p) ? static_cast<size_t>(image_header(p).length) : 0;
}

void write_native_image(const Program* p, void* out) noexcept {
    if (!program_maps_natively(p)) return;
    const Header h = image_header(p);
    const void* data[kParts] = {p->native_meta,     p->native_arrays[0], p->native_arrays[1], p->native_arrays[2],
                                p->native_arrays[3], p->base_margin,       p->missing_inputs.data(),
                                p->bucket_edges, p->bucket_counts, p->linear_packed};
    char* image = static_cast<char*>(out);
    std::memset(image, 0, static_cast<size_t>(h.length));
    std::memcpy(image, &h, sizeof h);
    for (int k = 0; k < kParts; ++k)
        if (h.count[k] > 0) std::memcpy(image + h.offset[k], data[k], h.count[k] * kElement[k]);
}

bool program_native_image(const Program* p, std::string* image) {
    const size_t length = native_image_length(p);
    if (length == 0) return false;
    image->assign(length, '\0');
    write_native_image(p, image->data());
    return true;
}

void read_native_image(const void* image, size_t length, Program& p) {
    if (image == nullptr || length < sizeof(Header) || reinterpret_cast<uintptr_t>(image) % kAlign != 0)
        damaged("no header, or not aligned");
    Header h;
    std::memcpy(&h, image, sizeof h);
    if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.length != static_cast<int64_t>(length))
        damaged("bad header");
    const char* base = static_cast<const char*>(image);
    for (int k = 0; k < kParts; ++k)
        if (h.count[k] < 0 || h.offset[k] < static_cast<int64_t>(sizeof(Header)) || h.offset[k] % kAlign != 0 ||
            h.offset[k] > h.length || h.count[k] > (h.length - h.offset[k]) / static_cast<int64_t>(kElement[k]))
            damaged("an array lies outside the image");
    if (h.linear != 0) {
        spec::PostTransform link;
        if (h.linear != 1 || h.count[Terms] % kernels::kLinearTermFields != 0 || h.count[Meta] != 0 ||
            h.count[Nodes] != 0 || h.bucketizes != 0 || h.num_features < 0 || !known_link(h.link) ||
            !one_row_link(spec::transform_name(static_cast<spec::PostTransform>(h.link)), 1, h.output_width, &link))
            damaged("bad linear header");
        const auto* terms = reinterpret_cast<const double*>(base + h.offset[Terms]);
        const int64_t count = h.count[Terms] / kernels::kLinearTermFields;
        p.linear_terms = kernels::unpack_linear_terms(terms, count, h.num_features);  // checks every column
        p.num_features = h.num_features;
        p.output_width = h.output_width;
        p.reads_float64 = true;
        p.native_ops = true;
        p.linear = true;
        p.linear_packed = terms;
        p.linear_count = count;
        p.linear_intercept = h.linear_intercept;
        p.link = link;
        p.mapped = true;
        return;
    }
    const auto* meta = reinterpret_cast<const int64_t*>(base + h.offset[Meta]);
    const kernels::PackedView view = kernels::make_view(
        meta, h.count[Meta], reinterpret_cast<const int32_t*>(base + h.offset[Nodes]), h.count[Nodes],
        reinterpret_cast<const float*>(base + h.offset[Leaves]), h.count[Leaves],
        reinterpret_cast<const float*>(base + h.offset[Cuts]), h.count[Cuts],
        reinterpret_cast<const int32_t*>(base + h.offset[Aux]), h.count[Aux]);
    spec::PostTransform link;
    if (view.num_features != h.num_features || view.num_groups != 1 || h.count[Base] != 1 ||
        !known_link(h.link) ||
        !one_row_link(spec::transform_name(static_cast<spec::PostTransform>(h.link)), 1, h.output_width, &link))
        damaged("its header and its ensemble disagree");
    const auto* missing = reinterpret_cast<const int32_t*>(base + h.offset[Missing]);
    for (int64_t i = 0; i < h.count[Missing]; ++i)
        if (missing[i] < 0 || missing[i] >= view.num_features) damaged("missing_inputs out of range");
    const auto* counts = reinterpret_cast<const int64_t*>(base + h.offset[Counts]);
    if (h.bucketizes != 0) {
        if (h.bucketizes != 1 || h.bucket_stride < 0 || h.count[Counts] != h.num_features ||
            h.count[Edges] != h.num_features * h.bucket_stride)
            damaged("bad bucketize header");
        for (int64_t c = 0; c < h.num_features; ++c)
            if (counts[c] < 0 || counts[c] > h.bucket_stride) damaged("bad bucketize counts");
    } else if (h.count[Edges] != 0 || h.count[Counts] != 0) {
        damaged("bucketize arrays without a bucketize");
    }
    p.num_features = h.num_features;
    p.output_width = h.output_width;
    p.native_ops = true;  // its torch ops (the tail of large batches) run on one thread
    if (h.bucketizes != 0) {  // rows are float64, bucketized, then the rest
        p.reads_float64 = true;
        p.native_rest = true;
        p.bucketizes = true;
        p.bucket_edges = reinterpret_cast<const double*>(base + h.offset[Edges]);
        p.bucket_counts = counts;
        p.bucket_stride = h.bucket_stride;
        p.bucket_right = h.bucket_right != 0;
    } else {
        p.reads_float64 = false;
        p.one_row = true;
    }
    p.native = view;
    p.native_meta = meta;
    p.native_meta_size = h.count[Meta];
    for (int k = 0; k < 4; ++k) {
        p.native_lengths[k] = h.count[Nodes + k];
        p.native_arrays[k] = base + h.offset[Nodes + k];
    }
    p.base_margin = reinterpret_cast<const float*>(base + h.offset[Base]);
    p.link = link;
    p.missing_inputs.assign(missing, missing + h.count[Missing]);
    p.mapped = true;
}

}  // namespace pg_predict::runtime
