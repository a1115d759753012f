#pragma once

namespace pg_predict::pg {

// Skips libtorch's static destructors when a process leaves through proc_exit (process_exit.cpp).
void install_fast_exit();

}  // namespace pg_predict::pg
