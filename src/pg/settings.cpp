#include "settings.hpp"

#include "postgres_headers.hpp"
#include "access/parallel.h"
#include "pg_predict/runtime/api.hpp"
#include "pg_predict/runtime/strategies.hpp"

namespace pg_predict::pg {

bool batching_enabled = true;
int batch_size = 4096;
const char* strategy_setting = "auto";
int device_setting = DEVICE_AUTO;
int gpu_min_rows = 16384;
int gpu_batch_size = 262144;
int max_gpu_backends = 8;
int max_batch_size = kDefaultMaxBatchSize;
int keep_versions = 0;
int stats_max = 1000;
int shared_programs_size_mb = 64;
bool early_exit_enabled = true;
bool cascades_enabled = false;
bool approximate_top_k = false;
int top_k_filter_factor = 10;
bool prune_models = true;
bool overlap_batches = true;
bool share_featurizers = true;
int threads_setting = 1;
int cache_size_mb = 128;

namespace {

int max_threads = kDefaultMaxThreads;

// Only records the number (runtime::set_cache_limit); this can run in the postmaster.
void assign_cache_size(int value, void* extra) noexcept {
    runtime::set_cache_limit(static_cast<size_t>(Max(value, 0)) << 20);
}

// Only records the wish: torch must not be touched here, as this can run in the postmaster.
// An assign hook runs outside the C++ guard and must not fail: the setting's minimum is 1, the
// only values set_num_threads refuses are below it, hence noexcept.
void assign_threads(int value, void* extra) noexcept { runtime::set_num_threads(Max(value, 1)); }

// Any role may set batch_size and threads up to a ceiling that only a superuser changes
// (PGC_SUSET); above it only a superuser may set them. Checked where a role sets a value (SET,
// ALTER ROLE / DATABASE ... SET); the configuration file and the command line are the
// administrator's. Parallel workers restore the leader's values, checked there already.
bool within_ceiling(int value, int ceiling, const char* ceiling_name, GucSource source) {
    if (value <= ceiling || source < PGC_S_INTERACTIVE || InitializingParallelWorker || superuser()) return true;
    GUC_check_errdetail("Above %s = %d only a superuser may set it.", ceiling_name, ceiling);
    return false;
}

bool check_batch_size(int* value, void** extra, GucSource source) {
    return within_ceiling(*value, max_batch_size, "pg_predict.max_batch_size", source);
}

bool check_threads(int* value, void** extra, GucSource source) {
    return within_ceiling(*value, max_threads, "pg_predict.max_threads", source);
}

// pg_predict.strategy: an enum whose values are the compiler's strategy names (filled by
// define_settings from runtime::strategy_name_at), so pg_settings.enumvals lists them.
config_enum_entry strategy_options[16];
int strategy_value = 0;  // index into strategy_options; 0 = auto

void assign_strategy(int value, void* extra) { strategy_setting = strategy_options[value].name; }

const struct config_enum_entry device_options[] = {
    {"auto", DEVICE_AUTO, false}, {"cpu", DEVICE_CPU, false}, {"cuda", DEVICE_CUDA, false},
    {NULL, 0, false}};

// pg_predict.cpu_kernel: the native tree kernel's path. The names match kernels::isa_name.
const struct config_enum_entry cpu_kernel_options[] = {
    {"auto", 0, false},   {"avx512", 1, false},   {"avx2", 2, false},
    {"neon", 3, false},   {"portable", 4, false}, {NULL, 0, false}};

int cpu_kernel_setting = 0;

const char* cpu_kernel_name(int value) {
    for (const config_enum_entry* e = cpu_kernel_options; e->name != NULL; e++)
        if (e->val == value) return e->name;
    return "auto";
}

// A path this CPU (or build) lacks is refused when it is set, never silently replaced. The probe
// reads CPUID once per process and touches no torch, so this may run in the postmaster.
bool check_cpu_kernel(int* value, void** extra, GucSource source) {
    if (runtime::cpu_kernel_available(cpu_kernel_name(*value))) return true;
    GUC_check_errdetail("This CPU and build offer: %s.", runtime::available_cpu_kernels());
    return false;
}

void assign_cpu_kernel(int value, void* extra) noexcept { runtime::set_cpu_kernel(cpu_kernel_name(value)); }

bool bitvector_layout = true;

bool check_bitvector_layout(bool* value, void** extra, GucSource source) {
    if (!*value || runtime::bitvector_layout_built()) return true;
    GUC_check_errcode(ERRCODE_FEATURE_NOT_SUPPORTED);
    GUC_check_errdetail("This pg_predict was built without the bitvector layout (cmake -DPG_PREDICT_BITVECTOR=OFF).");
    return false;
}

void assign_bitvector_layout(bool value, void* extra) noexcept { runtime::set_bitvector_layout(value); }

}  // namespace

void define_settings() {
    DefineCustomBoolVariable(
        "pg_predict.early_exit", "Stop scoring rows that a threshold or a top-K already decides.",
        "A PredictBatch node bounds a tree ensemble's score from its first trees and skips the rest "
        "for rows that cannot pass a WHERE threshold or reach an ORDER BY ... LIMIT; results are "
        "the same either way. Applies at execution: cached plans follow the setting.",
        &early_exit_enabled, true, PGC_USERSET, 0, NULL, NULL, NULL);
    DefineCustomBoolVariable(
        "pg_predict.cascades", "Score a classifier's predict() and predict_label() through its cascade.",
        "A version with a cascade (create_cascade) gives the small model's label where it is at least as sure as "
        "the cascade's threshold, and the model's elsewhere: approximate, so off by default.",
        &cascades_enabled, false, PGC_USERSET, 0, NULL, NULL, NULL);
    DefineCustomBoolVariable(
        "pg_predict.approximate_top_k", "Answer ORDER BY a score LIMIT K through the model's top-K filter.",
        "A version with a filter (create_cascade) scores every row with it, keeps the best "
        "max(top_k_filter_factor x K, 5% of the rows) and scores only those with the model: the top K by the "
        "model's exact score among them. Approximate, so off by default.",
        &approximate_top_k, false, PGC_USERSET, 0, NULL, NULL, NULL);
    DefineCustomIntVariable(
        "pg_predict.top_k_filter_factor", "Rows a top-K filter keeps per row the query asks for.",
        "The filter keeps at least this many times K rows (Willump's c), more where 5% of the rows is more.",
        &top_k_filter_factor, 10, 1, 100000, PGC_USERSET, 0, NULL, NULL, NULL);
    DefineCustomBoolVariable(
        "pg_predict.enable_batching", "Score predict() calls in batches with a PredictBatch plan node.",
        "When off, every call runs the model for one row at a time.", &batching_enabled, true,
        PGC_USERSET, 0, NULL, NULL, NULL);
    DefineCustomIntVariable(
        "pg_predict.batch_size", "Largest number of rows a PredictBatch node scores in one model call.",
        "Batches start small and grow to this size, so a LIMIT stops early. At most "
        "pg_predict.max_batch_size; a batch's buffers also stay within 256 MB.", &batch_size, 4096, 1,
        1 << 20, PGC_USERSET, 0, check_batch_size, NULL, NULL);
    DefineCustomIntVariable(
        "pg_predict.max_batch_size", "Ceiling of pg_predict.batch_size (superuser only).",
        "Bounds the rows, memory and time of one model call that any role can ask for.", &max_batch_size,
        kDefaultMaxBatchSize, 1, 1 << 20, PGC_SUSET, 0, NULL, NULL, NULL);
    DefineCustomIntVariable(
        "pg_predict.threads", "Threads each backend uses to evaluate a model.",
        "Intra-operator threads of libtorch in this backend. Parallel workers each get their own; "
        "keep threads x workers within the cores you can spare.",
        &threads_setting, 1, 1, 256, PGC_USERSET, 0, check_threads, assign_threads, NULL);
    DefineCustomIntVariable(
        "pg_predict.max_threads", "Ceiling of pg_predict.threads (superuser only).",
        "Bounds the cores one backend's model calls can take.", &max_threads, kDefaultMaxThreads, 1, 256,
        PGC_SUSET, 0, NULL, NULL, NULL);
    DefineCustomIntVariable(
        "pg_predict.cache_size", "Memory each backend may keep for loaded model programs it is not using.",
        "Programs are cached per backend so a model is loaded once; beyond this size the least "
        "recently used idle ones are freed. Programs of replaced or dropped models are freed "
        "when the backend next looks the model up. 0 keeps only the programs in use.",
        &cache_size_mb, 128, 0, INT_MAX / 2, PGC_USERSET, GUC_UNIT_MB, NULL, assign_cache_size, NULL);
    DefineCustomIntVariable(
        "pg_predict.keep_versions", "Versions of a model kept when a new one is added (0 keeps all).",
        "create_model() and train() of an existing name add a version; beyond the newest N the "
        "oldest are removed, never the deployed one.",
        &keep_versions, 0, 0, INT_MAX, PGC_USERSET, 0, NULL, NULL, NULL);
    size_t strategies = 0;
    for (const char* name; strategies + 1 < lengthof(strategy_options) &&
                           (name = runtime::strategy_name_at(strategies)) != nullptr;
         strategies++)
        strategy_options[strategies] = {name, static_cast<int>(strategies), false};
    strategy_options[strategies] = {NULL, 0, false};
    DefineCustomEnumVariable(
        "pg_predict.strategy", "Tree strategy used at run time instead of each model's own.",
        "auto uses the program compiled at create_model; gemm, tree_traversal, "
        "perfect_tree_traversal and native recompile the model's spec once per backend.",
        &strategy_value, 0, strategy_options, PGC_USERSET, 0, NULL, assign_strategy, NULL);
    DefineCustomEnumVariable(
        "pg_predict.cpu_kernel", "Which CPU implementation the native tree strategy uses: auto, avx512, avx2, neon or portable.",
        "auto takes the widest this CPU offers (avx512, then avx2, then neon, then portable); naming a "
        "path the CPU lacks is an error. All paths give bit-identical results.",
        &cpu_kernel_setting, 0, cpu_kernel_options, PGC_USERSET, 0, check_cpu_kernel, assign_cpu_kernel, NULL);
    DefineCustomEnumVariable(
        "pg_predict.device", "Where models are evaluated: cpu, cuda or auto.",
        "auto uses the GPU when pg_predict was built with CUDA, a GPU is visible and a batch has "
        "at least pg_predict.gpu_min_rows rows; cuda uses it for every batch and is an error "
        "when CUDA cannot be used.",
        &device_setting, DEVICE_AUTO, device_options, PGC_USERSET, 0, NULL, NULL, NULL);
    DefineCustomIntVariable(
        "pg_predict.gpu_min_rows", "Smallest batch that device = auto scores on the GPU.",
        "Smaller batches (and the per-row path) stay on the CPU, where the transfer does not pay.",
        &gpu_min_rows, 16384, 1, INT_MAX, PGC_USERSET, 0, NULL, NULL, NULL);
    DefineCustomIntVariable(
        "pg_predict.gpu_batch_size", "Largest number of rows a PredictBatch node scores in one GPU call.",
        "Used instead of pg_predict.batch_size when the query may use the GPU.", &gpu_batch_size,
        262144, 1, 1 << 22, PGC_USERSET, 0, NULL, NULL, NULL);
    DefineCustomIntVariable(
        "pg_predict.max_gpu_backends", "Most backends that may hold a CUDA context at once.",
        "A backend keeps its GPU slot until it exits; others score on the CPU. Enforced only when "
        "pg_predict is in shared_preload_libraries.",
        &max_gpu_backends, 8, 0, kMaxGpuSlots, PGC_SIGHUP, 0, NULL, NULL, NULL);
    // Sizes shared memory, so it exists only when preloaded: PostgreSQL refuses (FATAL) to
    // define a PGC_POSTMASTER setting after startup. Without preloading each session's own
    // counts keep the default.
    if (process_shared_preload_libraries_in_progress)
        DefineCustomIntVariable(
            "pg_predict.stats_max", "Most model versions the usage statistics (model_stats) keep.",
            "One entry per database and model version. When a new version is scored with every entry "
            "taken, the least recently used entry is dropped (model_stats_info() counts them).",
            &stats_max, 1000, 10, 1 << 20, PGC_POSTMASTER, 0, NULL, NULL, NULL);
    if (process_shared_preload_libraries_in_progress)
        DefineCustomIntVariable(
            "pg_predict.shared_programs_size", "Shared memory for model programs every backend maps.",
            "A native program (trees, linear models) loaded by one backend is kept here once, and other "
            "backends map it instead of loading their own copy. Images no backend maps are evicted, least "
            "recently mapped first, when a new one needs room. 0 turns sharing off.",
            &shared_programs_size_mb, 64, 0, 1 << 20, PGC_POSTMASTER, GUC_UNIT_MB, NULL, NULL, NULL);
    DefineCustomBoolVariable(
        "pg_predict.prune_models", "Specialize a model for the query's WHERE clause on its feature columns.",
        "Tree nodes that no row the scan's restrictions let through can reach are removed, and a "
        "column the specialized model does not read is not fetched. Results are the same.",
        &prune_models, true, PGC_USERSET, 0, NULL, NULL, NULL);
    DefineCustomBoolVariable(
        "pg_predict.overlap", "Score a batch on a background thread while the next one is read.",
        "With pg_predict.threads of 2 or more, the trees of a batch are walked on threads - 1 threads "
        "while the backend reads the next batch from the plan below, then the backend joins them. "
        "Tree ensembles on the native kernel only. Results are the same.",
        &overlap_batches, true, PGC_USERSET, 0, NULL, NULL, NULL);
    DefineCustomBoolVariable(
        "pg_predict.share_featurizers", "Run a featurizer once for the models of a batch that share it.",
        "With the model named per row, the groups of models whose featurizer steps are the same (one "
        "fitted ColumnTransformer before each tenant's model) are featurized in one run, then each "
        "model's estimator scores its rows. Results are the same.",
        &share_featurizers, true, PGC_USERSET, 0, NULL, NULL, NULL);
    DefineCustomBoolVariable(
        "pg_predict.bitvector_layout", "Score leaf-wise and deep trees with the bitvector (QuickScorer) layout.",
        "The native kernel's fastest layout for trees the perfect layout cannot hold (LightGBM's, XGBoost's "
        "lossguide); covered by US patent 11,106,685 (docs/design.md). Off, such models are scored by the "
        "generic tree walk, with the same results. A build with -DPG_PREDICT_BITVECTOR=OFF has no such "
        "layout, and refuses on.",
        &bitvector_layout, runtime::bitvector_layout_built(), PGC_USERSET, 0, check_bitvector_layout,
        assign_bitvector_layout, NULL);
    MarkGUCPrefixReserved("pg_predict");
}

}  // namespace pg_predict::pg
