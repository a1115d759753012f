// explain_model(name): the spec before and after the optimizer, the columns the model reads and
// the deployed version's profile. Like predict(), only roles that may use the model may read it (privileges.hpp); the
// body is runtime::explain_model.
#include <cstdlib>

#include "sql/arguments.hpp"
#include "catalog/catalog.hpp"
#include "guard.hpp"
#include "pg_predict/runtime/api.hpp"
#include "catalog/privileges.hpp"

using namespace pg_predict::pg;

extern "C" {

PG_PREDICT_SQL_FUNCTION(pg_predict_explain_model);

Datum pg_predict_explain_model(PG_FUNCTION_ARGS) {
    char* name = required_text_arg(fcinfo, 0, "model name");
    CatalogEntry* entry = catalog_lookup(name, false);
    check_model_usage(entry);
    char* spec = catalog_spec(entry->id);
    size_t length = strlen(spec);
    char* raw = guarded([&] {
        std::vector<std::string> columns;
        std::vector<int32_t> unused;
        for (int f = 0; f < entry->num_features; f++) {
            columns.emplace_back(entry->columns[f][0] != '\0' ? entry->columns[f]
                                                                : "$" + std::to_string(f + 1));
            if (entry->is_unused[f]) unused.push_back(f);
        }
        return pg_predict::runtime::explain_model(entry->name, spec, length, columns, unused);
    });
    // Copy out of malloc'd memory before anything that may raise an error.
    char* copy = (char*)palloc(strlen(raw) + 1);
    memcpy(copy, raw, strlen(raw) + 1);
    free(raw);
    // The version's profile (profile_model, train()), null when it has none.
    if (catalog_has_profiles()) {
        char* profile = catalog_profile(entry->id);
        char* end = strrchr(copy, '}');
        if (end != NULL) {
            *end = '\0';
            copy = psprintf("%s, \"profile\": %s}", copy, profile != NULL ? profile : "null");
        }
    }
    PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(copy)));
}

}  // extern "C"
