// Program ids for the unit tests: the runtime caches loaded programs by id, so two tests that
// load different programs under one id get each other's program. One counter for the whole
// test binary keeps every id distinct, whatever tests run and in what order.
#pragma once

#include <cstdint>

namespace pg_predict::testing {

inline int64_t next_program_id() {
    static int64_t id = int64_t(1) << 40;
    return ++id;
}

}  // namespace pg_predict::testing
