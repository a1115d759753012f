// Device placement (pg_predict.device) and the cap on backends that hold a CUDA context
// (pg_predict.max_gpu_backends).
//
// A backend that touches CUDA keeps its context (hundreds of MB of GPU memory) until it exits,
// so the cap counts backends, not queries: a backend takes a slot the first time it scores on
// the GPU and gives it back when it exits. Slots live in shared memory reserved when
// pg_predict is in shared_preload_libraries; without preloading there is no shared memory to
// count in and the cap is not enforced (every backend may use the GPU).
#pragma once

namespace pg_predict::pg {

// Whether this query may score on the GPU at all: false for device = cpu, or for auto when
// the build has no CUDA or no GPU is visible. device = cuda then raises an ERROR naming the
// reason. Asks the CUDA driver once per backend: call it at execution, not in the postmaster.
bool gpu_wanted();

// Takes a GPU slot for this backend (once; kept until exit). False when the cap is reached:
// the caller scores on the CPU and says so in EXPLAIN. True without preloading.
bool claim_gpu_slot();

// For EXPLAIN without ANALYZE: whether claim_gpu_slot() would succeed now, without claiming.
bool gpu_slot_available();

// _PG_init: reserve the slot array when preloading (does nothing otherwise).
void install_gpu_slots();

}  // namespace pg_predict::pg
