// A loaded TorchScript program, for the runtime's torch files (program.cpp runs it,
// shared_featurizer.cpp shares its featurizer with other programs).
#pragma once

#include <optional>

#include <torch/script.h>

namespace pg_predict::runtime {

struct SharedFeaturizer;

// shared_featurizer.cpp: when the module's featurizer is one a loaded program of this backend
// has too (same "featurizer_source", buffers of the same contents), points the module's
// featurizer buffers at that program's tensors and returns the shared record with a reference
// held; *shared_bytes gets the bytes no longer held twice (0 for the first holder). nullptr
// for a module without a shareable featurizer (compiled before, or with a nested model).
SharedFeaturizer* share_featurizer(torch::jit::Module& module, size_t* shared_bytes);
void unshare_featurizer(SharedFeaturizer*) noexcept;

struct LoadedModule {
    explicit LoadedModule(torch::jit::Module m) : module(std::move(m)), forward(module.get_method("forward")) {}
    ~LoadedModule() {
        if (featurizer != nullptr) unshare_featurizer(featurizer);
    }
    LoadedModule(const LoadedModule&) = delete;
    LoadedModule& operator=(const LoadedModule&) = delete;

    torch::jit::Module module;
    torch::jit::Method forward;
    torch::Device device = torch::kCPU;
    // CUDA only: pinned host staging buffers, grown to the largest batch seen.
    at::Tensor pinned_in, pinned_out;
    // A CPU program whose forward() is from_features(featurize(x)) with a shared featurizer:
    // a batch of several such programs runs featurize() once (run_sharing_featurizer).
    SharedFeaturizer* featurizer = nullptr;
    std::optional<torch::jit::Method> featurize, from_features;
};

}  // namespace pg_predict::runtime
