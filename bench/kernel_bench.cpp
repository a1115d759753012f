// Micro-benchmark of the native tree kernel (not a test; `cmake --build B --target kernel_bench`).
//
//   kernel_bench --model m.json --data X.f32 [--rows 1000000] [--threads 1,2] [--reps 3]
//                [--isa auto|portable|avx2|avx512|neon] [--check margins.f32] [--no-perfect]
//   kernel_bench --random [--trees 500] [--depth 8] [--features 28] [--rows 1000000] ...
//
// X.f32 is raw float32, rows × features, row-major (bench/kernel_bench_xgb.py writes it with
// the model and XGBoost's own margins and times). Prints per-thread-count median seconds.
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <time.h>

#include <nlohmann/json.hpp>

#include "pg_predict/importers/import.hpp"
#include "pg_predict/kernels/tree_ensemble.hpp"
#include "pg_predict/spec/pipeline.hpp"

using namespace pg_predict;

namespace {

double cpu_seconds() {  // the process's CPU time: the machine is shared, wall time is noisy
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

std::vector<float> read_floats(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    in.seekg(0, std::ios::end);
    const size_t bytes = static_cast<size_t>(in.tellg());
    in.seekg(0);
    std::vector<float> v(bytes / 4);
    in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
    return v;
}

spec::TreeEnsemble random_ensemble(int trees, int depth, int features, std::mt19937& rng) {
    spec::TreeEnsemble e;
    e.num_features = features;
    e.num_groups = 1;
    e.base_margin = {0.0f};
    std::normal_distribution<float> thr(0.0f, 1.0f);
    std::uniform_int_distribution<int> feat(0, features - 1);
    for (int t = 0; t < trees; ++t) {
        spec::Tree tr;
        const int n = (2 << depth) - 1;
        for (int i = 0; i < n; ++i) {
            const bool leaf = i >= (1 << depth) - 1;
            tr.left.push_back(leaf ? -1 : 2 * i + 1);
            tr.right.push_back(leaf ? -1 : 2 * i + 2);
            tr.feature.push_back(leaf ? 0 : feat(rng));
            tr.threshold.push_back(leaf ? 0.0f : thr(rng));
            tr.default_left.push_back(rng() & 1);
            tr.value.push_back(leaf ? thr(rng) * 0.01f : 0.0f);
        }
        e.trees.push_back(std::move(tr));
    }
    return e;
}

}  // namespace

int main(int argc, char** argv) {
    std::string model_path, data_path, check_path, isa_arg = "auto", threads_arg = "1,2";
    int64_t rows = 1000000;
    int trees = 500, depth = 8, features = 28, reps = 3;
    bool random = false, allow_perfect = true;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) throw std::runtime_error("missing value for " + a);
            return argv[++i];
        };
        if (a == "--model") model_path = next();
        else if (a == "--data") data_path = next();
        else if (a == "--check") check_path = next();
        else if (a == "--isa") isa_arg = next();
        else if (a == "--threads") threads_arg = next();
        else if (a == "--rows") rows = std::stoll(next());
        else if (a == "--trees") trees = std::stoi(next());
        else if (a == "--depth") depth = std::stoi(next());
        else if (a == "--features") features = std::stoi(next());
        else if (a == "--reps") reps = std::stoi(next());
        else if (a == "--random") random = true;
        else if (a == "--no-perfect") allow_perfect = false;  // the bitvector (or generic) layout
        else { std::cerr << "unknown argument " << a << "\n"; return 2; }
    }
    std::mt19937 rng(42);
    spec::TreeEnsemble e;
    if (!random) {
        std::ifstream in(model_path);
        if (!in) { std::cerr << "need --model m.json (or --random)\n"; return 2; }
        std::stringstream ss;
        ss << in.rdbuf();
        e = importers::import_model(nlohmann::json::parse(ss.str()), "auto").model;
    } else {
        e = random_ensemble(trees, depth, features, rng);
    }
    features = e.num_features;
    std::vector<float> x;
    if (!data_path.empty()) {
        x = read_floats(data_path);
        rows = std::min<int64_t>(rows, static_cast<int64_t>(x.size()) / features);
        x.resize(static_cast<size_t>(rows * features));
    } else {
        std::normal_distribution<float> d(0.0f, 1.0f);
        x.resize(static_cast<size_t>(rows * features));
        for (float& v : x) v = d(rng);
    }
    kernels::Isa isa = kernels::Isa::Auto;
    if (!kernels::parse_isa(isa_arg, &isa)) {
        std::fprintf(stderr, "unknown --isa %s\n", isa_arg.c_str());
        return 2;
    }
    auto t0 = std::chrono::steady_clock::now();
    const kernels::PackedEnsemble packed = kernels::pack(e, allow_perfect);
    const kernels::PackedView view = kernels::make_view(packed);
    const double pack_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const int64_t bytes = static_cast<int64_t>(packed.nodes.size() * 4 + packed.leaves.size() * 4 +
                                               packed.cuts.size() * 4 + packed.aux.size() * 4);
    std::printf("model: %zu trees, depth %d, %d features, %d groups; layout %s, %lld blocks; packed %.2f MB "
                "(%zu cuts) in %.3f s; isa %s\n",
                e.trees.size(), e.max_depth(), features, e.num_groups,
                view.layout == kernels::Layout::Perfect     ? "perfect"
                : view.layout == kernels::Layout::Bitvector ? "bitvector"
                                                            : "generic",
                (long long)view.units,
                bytes / 1e6, packed.cuts.size(), pack_s, kernels::isa_name(kernels::resolve_isa(isa)));

    std::vector<float> margins(static_cast<size_t>(rows * e.num_groups));
    std::stringstream ts(threads_arg);
    std::string tok;
    while (std::getline(ts, tok, ',')) {
        const int th = std::stoi(tok);
        at::set_num_threads(th);
        kernels::score(view, x.data(), std::min<int64_t>(rows, 4096), features, margins.data(), isa);  // warm
        std::vector<double> times, cpu;
        for (int r = 0; r < reps; ++r) {
            const auto s = std::chrono::steady_clock::now();
            const double c = cpu_seconds();
            kernels::score(view, x.data(), rows, features, margins.data(), isa);
            cpu.push_back(cpu_seconds() - c);
            times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count());
        }
        std::vector<double> sorted = times, csorted = cpu;
        std::sort(sorted.begin(), sorted.end());
        std::sort(csorted.begin(), csorted.end());
        std::printf("threads %d: wall median %.3f s (", th, sorted[sorted.size() / 2]);
        for (double t : times) std::printf(" %.3f", t);
        std::printf(" ), cpu median %.3f s, %.2f Mrows/s wall\n", csorted[csorted.size() / 2],
                    rows / sorted[sorted.size() / 2] / 1e6);
    }
    if (!check_path.empty()) {
        // XGBoost's margins include the base score; ours are the sum of leaves.
        const std::vector<float> ref = read_floats(check_path);
        double worst = 0.0;
        for (int64_t r = 0; r < rows && r < static_cast<int64_t>(ref.size()) / e.num_groups; ++r)
            for (int g = 0; g < e.num_groups; ++g) {
                const float base = g < static_cast<int>(e.base_margin.size()) ? e.base_margin[g] : 0.0f;
                worst = std::max(worst, std::fabs(double(margins[r * e.num_groups + g]) + base -
                                                  ref[r * e.num_groups + g]));
            }
        std::printf("max |margin - xgboost margin| = %.3g\n", worst);
    }
    return 0;
}
