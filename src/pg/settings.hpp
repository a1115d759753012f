// The pg_predict.* settings (GUCs).
#pragma once

namespace pg_predict::pg {

extern bool batching_enabled;   // pg_predict.enable_batching
extern int batch_size;          // pg_predict.batch_size: rows per model call, at most
extern char* strategy_setting;  // pg_predict.strategy: "auto" keeps each model's own

void define_settings();

}  // namespace pg_predict::pg
