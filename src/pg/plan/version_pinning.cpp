#include "plan/version_pinning.hpp"

#include "catalog/catalog.hpp"
#include "catalog/citus.hpp"
#include "plan/predict_calls.hpp"

extern "C" {
#include "nodes/nodeFuncs.h"
}

// No C++ object with a destructor may live in these frames: ereport longjmps.

namespace pg_predict::pg {

namespace {

struct Pinning {
    bool any_call;  // a call with a constant name was seen
    bool pin;       // rewrite them (the first pass only looks)
    bool pinned;
};

bool pin_walker(Node* node, Pinning* state) {
    if (node == NULL) return false;
    if (IsA(node, Query)) return query_tree_walker((Query*)node, (bool (*)())pin_walker, state, 0);
    if (IsA(node, FuncExpr)) {
        FuncExpr* call = (FuncExpr*)node;
        Node* first = call->args != NIL ? (Node*)linitial(call->args) : NULL;
        if (first != NULL && IsA(first, Const) && !((Const*)first)->constisnull &&
            ((Const*)first)->consttype == TEXTOID && predict_call_kind(call->funcid) != PredictCallKind::None) {
            state->any_call = true;
            Const* name = (Const*)first;
            char* model = TextDatumGetCString(name->constvalue);
            if (state->pin && strchr(model, kVersionPinMark) == NULL) {
                // A missing model or a missing privilege is reported where it is scored.
                CatalogEntry* entry = catalog_lookup(model, true, GetTransactionSnapshot());
                if (entry != NULL) {
                    name->constvalue = CStringGetTextDatum(pin_model_version(model, entry->id));
                    state->pinned = true;
                }
            }
        }
    }
    return expression_tree_walker(node, (bool (*)())pin_walker, state);
}

}  // namespace

bool pin_model_versions(Query* parse) {
    Pinning state = {false, false, false};
    pin_walker((Node*)parse, &state);
    if (!state.any_call || !catalog_is_citus_reference_table() || on_citus_worker()) return false;
    state.pin = true;
    pin_walker((Node*)parse, &state);
    return state.pinned;
}

}  // namespace pg_predict::pg
