// Per-model privileges: who may use a model (score it with predict / predict_proba, read it
// with explain_model). Its owner, superusers, and the roles granted its use by name
// (grant_model_usage; "public" means every role). Checked once per statement, where a model is
// bound to a query (bind_model) and by explain_model, never per row.
#pragma once

#include "catalog/catalog.hpp"

namespace pg_predict::pg {

// Whether the current user may use a model with this owner and these grants.
bool may_use_model(const char* owner, char* const* usable_by, int num_usable_by);

// Errors unless the current user may use the model.
void check_model_usage(const CatalogEntry* entry);

// The role whose members may import TorchScript (the extension's script creates it).
constexpr const char* torchscript_role = "pgpredict_torchscript";

// Errors (42501) unless the current user may create a model from a TorchScript module: loading
// and running one executes the user's code in the server, so only superusers and members of
// torchscript_role may.
void check_torchscript_import();

}  // namespace pg_predict::pg
