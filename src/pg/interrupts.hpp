// The PostgreSQL side of common/interrupt.hpp: the probe C++ code polls.
#pragma once

namespace pg_predict::pg {

// Registers the probe; called from _PG_init (it only stores a function pointer, so it is safe
// in the postmaster).
void install_interrupt_probe();

}  // namespace pg_predict::pg
