// Per-model privileges (privileges.hpp) and the SQL functions that manage them:
// grant_model_usage, revoke_model_usage, set_model_owner and the view's model_usable.
#include "catalog/privileges.hpp"

namespace pg_predict::pg {

namespace {

// Roles are kept by name (so that a dump restores into a cluster without them); a name that
// denotes no role now grants nothing.
bool has_privs_of_role_named(const char* role) {
    if (role == NULL) return false;
    Oid oid = get_role_oid(role, true);
    return OidIsValid(oid) && has_privs_of_role(GetUserId(), oid);
}

bool is_public(const char* role) { return pg_strcasecmp(role, "public") == 0; }

}  // namespace

bool may_use_model(const char* owner, char* const* usable_by, int num_usable_by) {
    if (superuser() || has_privs_of_role_named(owner)) return true;
    for (int i = 0; i < num_usable_by; i++)
        if (is_public(usable_by[i]) || has_privs_of_role_named(usable_by[i])) return true;
    return false;
}

void check_model_usage(const CatalogEntry* entry) {
    if (!may_use_model(entry->owner, entry->usable_by, entry->num_usable_by))
        ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                        errmsg("permission denied for model \"%s\"", entry->name),
                        errhint("Its owner can grant its use: SELECT grant_model_usage('%s', '%s').",
                                entry->name, GetUserNameFromId(GetUserId(), false))));
}

void check_torchscript_import() {
    if (superuser()) return;
    Oid role = get_role_oid(torchscript_role, true);
    if (OidIsValid(role) && has_privs_of_role(GetUserId(), role)) return;
    ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                    errmsg("permission denied to create a model from a TorchScript module"),
                    errdetail("Loading a TorchScript module runs its code inside the server."),
                    errhint("Only superusers and members of role %s may: GRANT %s TO the role.",
                            torchscript_role, torchscript_role)));
}

}  // namespace pg_predict::pg

using namespace pg_predict::pg;

namespace {

char* text_arg(FunctionCallInfo fcinfo, int arg) { return text_to_cstring(PG_GETARG_TEXT_PP(arg)); }

// The name to store for the role argument: "public", or an existing role's name as given.
const char* grantee_name(const char* role) {
    if (is_public(role)) return "public";
    get_role_oid(role, false);  // "role ... does not exist"
    return role;
}

}  // namespace

extern "C" {

PG_PREDICT_SQL_FUNCTION(pg_predict_model_usable);
PG_PREDICT_SQL_FUNCTION(pg_predict_grant_model_usage);
PG_PREDICT_SQL_FUNCTION(pg_predict_revoke_model_usage);
PG_PREDICT_SQL_FUNCTION(pg_predict_set_model_owner);

Datum pg_predict_model_usable(PG_FUNCTION_ARGS) {
    const char* owner = PG_ARGISNULL(0) ? NULL : text_arg(fcinfo, 0);
    char** usable_by = NULL;
    int count = 0;
    if (!PG_ARGISNULL(1)) {
        Datum* elements;
        bool* nulls;
        deconstruct_array(PG_GETARG_ARRAYTYPE_P(1), TEXTOID, -1, false, TYPALIGN_INT, &elements,
                          &nulls, &count);
        usable_by = (char**)palloc(sizeof(char*) * Max(count, 1));
        for (int i = 0; i < count; i++) usable_by[i] = nulls[i] ? NULL : TextDatumGetCString(elements[i]);
        int kept = 0;  // a NULL element grants nothing
        for (int i = 0; i < count; i++)
            if (usable_by[i] != NULL) usable_by[kept++] = usable_by[i];
        count = kept;
    }
    PG_RETURN_BOOL(may_use_model(owner, usable_by, count));
}

Datum pg_predict_grant_model_usage(PG_FUNCTION_ARGS) {
    prevent_catalog_change("grant_model_usage()");
    char* model = text_arg(fcinfo, 0);
    const char* role = grantee_name(text_arg(fcinfo, 1));
    catalog_update_model(model,
                         "usable_by = CASE WHEN $2 OPERATOR(pg_catalog.=) ANY (usable_by) THEN usable_by "
                         "ELSE pg_catalog.array_append(usable_by, $2) END",
                         role);
    PG_RETURN_VOID();
}

Datum pg_predict_revoke_model_usage(PG_FUNCTION_ARGS) {
    prevent_catalog_change("revoke_model_usage()");
    char* model = text_arg(fcinfo, 0);
    char* role = text_arg(fcinfo, 1);
    // A role dropped or never created may still be named in a restored catalog: no lookup.
    catalog_update_model(model, "usable_by = pg_catalog.array_remove(usable_by, $2)",
                         is_public(role) ? "public" : role);
    PG_RETURN_VOID();
}

// As ALTER ... OWNER TO: a superuser, or the owner when it has the privileges of the new role.
Datum pg_predict_set_model_owner(PG_FUNCTION_ARGS) {
    prevent_catalog_change("set_model_owner()");
    char* model = text_arg(fcinfo, 0);
    char* new_owner = text_arg(fcinfo, 1);
    Oid role = get_role_oid(new_owner, false);
    if (!superuser() && !has_privs_of_role(GetUserId(), role))
        ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                        errmsg("must be able to SET ROLE \"%s\"", new_owner)));
    catalog_update_model(model, "owner = $2", new_owner);
    PG_RETURN_VOID();
}

}  // extern "C"
