// The pg_predict.* settings (GUCs).
#pragma once

namespace pg_predict::pg {

extern bool batching_enabled;   // pg_predict.enable_batching
extern int batch_size;          // pg_predict.batch_size: rows per model call, at most
extern int max_batch_size;      // pg_predict.max_batch_size: its ceiling for ordinary roles
constexpr int kDefaultMaxBatchSize = 65536;
constexpr int kDefaultMaxThreads = 16;
extern const char* strategy_setting;  // pg_predict.strategy's name: "auto" keeps each model's own

enum DeviceSetting { DEVICE_AUTO, DEVICE_CPU, DEVICE_CUDA };
constexpr int kMaxGpuSlots = 256;  // upper bound of pg_predict.max_gpu_backends

extern int device_setting;      // pg_predict.device
extern int gpu_min_rows;        // pg_predict.gpu_min_rows: auto uses the GPU from this batch size
extern int gpu_batch_size;      // pg_predict.gpu_batch_size: rows per model call on the GPU
extern int max_gpu_backends;    // pg_predict.max_gpu_backends (enforced when preloaded)

extern int keep_versions;       // pg_predict.keep_versions: versions a name keeps (0: all)
extern int shared_programs_size_mb;  // pg_predict.shared_programs_size: the shared programs' area
extern int stats_max;           // pg_predict.stats_max: model versions the usage statistics keep
extern bool approximate_top_k;  // pg_predict.approximate_top_k: ORDER BY a score LIMIT K through a filter (off)
extern int top_k_filter_factor;  // pg_predict.top_k_filter_factor: rows kept per row asked for (10)
extern bool cascades_enabled;   // pg_predict.cascades: predict through a version's cascade (off)
extern bool early_exit_enabled; // pg_predict.early_exit: thresholds and top-K stop rows early
extern bool prune_models;       // pg_predict.prune_models: specialize models for the WHERE clause
extern bool overlap_batches;    // pg_predict.overlap: score a batch while the next one is read
extern bool share_featurizers;  // pg_predict.share_featurizers: models named per row share featurizer runs
extern int threads_setting;     // pg_predict.threads
extern int cache_size_mb;       // pg_predict.cache_size: programs a backend keeps (MB)

void define_settings();

}  // namespace pg_predict::pg
