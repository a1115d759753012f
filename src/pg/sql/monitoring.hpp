// What train() shares with profile_model() (sql/monitoring_functions.cpp).
#pragma once

#include "postgres_headers.hpp"

namespace pg_predict::pg {

// Profiles the rows of train()'s `query` for the version it stored and keeps the profile with
// that version, as profile_model() would. `function`: train()'s OID (for its schema).
void profile_trained_version(const char* name, int version, const char* query, Oid function);

}  // namespace pg_predict::pg
