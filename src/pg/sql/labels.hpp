// What a classifier's labels are (numbers, boolean or text), so that a new version of a name
// keeps what predict() returns to every caller (issue 46).
#pragma once

#include "catalog/catalog.hpp"

namespace pg_predict::runtime {
struct BuiltModel;
}

namespace pg_predict::pg {

// "numeric", "boolean" (the labels false and true, as train() writes a boolean target's) or
// "text"; NULL for a model that is not a classifier.
const char* label_type_of(const CatalogEntry* entry);
const char* label_type_of(const runtime::BuiltModel* built);

// The labels as a short list for messages: "{0, 1}", "{false, true}".
char* labels_text(const CatalogEntry* entry);

// A WARNING when a new version of `name` (created by create_model, which may change them)
// changes the task or the type of the labels of the version deployed before, naming both.
void warn_on_changed_meaning(const char* name, const CatalogEntry* before, const runtime::BuiltModel* built,
                             int32 version);

}  // namespace pg_predict::pg
