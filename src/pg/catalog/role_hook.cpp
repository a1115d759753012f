#include "catalog/role_hook.hpp"

#include "catalog/catalog.hpp"

extern "C" {
#include "access/xact.h"
#include "commands/dbcommands.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
}

// No C++ object with a destructor may live in these frames: the catalog calls may ereport.

namespace pg_predict::pg {

namespace {

ProcessUtility_hook_type previous_utility_hook = NULL;

// Only databases with the extension have models; outside a transaction there is nothing to see.
bool catalog_present() {
    return IsTransactionState() && OidIsValid(get_extension_oid("pg_predict", true));
}

void refuse_drop_of_model_roles(DropRoleStmt* stmt) {
    ListCell* cell;
    foreach (cell, stmt->roles) {
        RoleSpec* spec = lfirst_node(RoleSpec, cell);
        if (spec->roletype != ROLESPEC_CSTRING) continue;  // PostgreSQL rejects these itself
        const char* role = spec->rolename;
        if (!OidIsValid(get_role_oid(role, true))) continue;  // IF EXISTS, or its own error
        char* owned;
        char* granted;
        catalog_role_references(role, &owned, &granted);
        if (owned == NULL && granted == NULL) continue;
        ereport(ERROR, (errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
                        errmsg("role \"%s\" cannot be dropped because some objects depend on it", role),
                        owned != NULL && granted != NULL
                            ? errdetail("owner of pg_predict models in database %s: %s\n"
                                        "usage of pg_predict models in database %s: %s",
                                        get_database_name(MyDatabaseId), owned,
                                        get_database_name(MyDatabaseId), granted)
                        : owned != NULL
                            ? errdetail("owner of pg_predict models in database %s: %s",
                                        get_database_name(MyDatabaseId), owned)
                            : errdetail("usage of pg_predict models in database %s: %s",
                                        get_database_name(MyDatabaseId), granted),
                        errhint("REASSIGN OWNED BY or DROP OWNED BY the role first, in every database "
                                "where it has models.")));
    }
}

// After PostgreSQL ran the command (and checked its privileges): the same for models.
void follow_role_command(Node* parsetree) {
    ListCell* cell;
    if (IsA(parsetree, ReassignOwnedStmt)) {
        ReassignOwnedStmt* stmt = (ReassignOwnedStmt*)parsetree;
        char* new_role = get_rolespec_name(stmt->newrole);
        foreach (cell, stmt->roles)
            catalog_reassign_owner(get_rolespec_name(lfirst_node(RoleSpec, cell)), new_role);
    } else if (IsA(parsetree, DropOwnedStmt)) {
        DropOwnedStmt* stmt = (DropOwnedStmt*)parsetree;
        foreach (cell, stmt->roles) catalog_drop_owned(get_rolespec_name(lfirst_node(RoleSpec, cell)));
    } else if (IsA(parsetree, RenameStmt) && ((RenameStmt*)parsetree)->renameType == OBJECT_ROLE) {
        RenameStmt* stmt = (RenameStmt*)parsetree;
        catalog_rename_role(stmt->subname, stmt->newname);
    }
}

bool is_role_command(Node* parsetree) {
    return IsA(parsetree, DropRoleStmt) || IsA(parsetree, ReassignOwnedStmt) ||
           IsA(parsetree, DropOwnedStmt) ||
           (IsA(parsetree, RenameStmt) && ((RenameStmt*)parsetree)->renameType == OBJECT_ROLE);
}

void role_utility_hook(PlannedStmt* pstmt, const char* query_string, bool read_only_tree,
                       ProcessUtilityContext context, ParamListInfo params,
                       QueryEnvironment* query_env, DestReceiver* dest, QueryCompletion* qc) {
    Node* parsetree = pstmt->utilityStmt;
    bool ours = is_role_command(parsetree) && catalog_present();
    if (ours && IsA(parsetree, DropRoleStmt)) refuse_drop_of_model_roles((DropRoleStmt*)parsetree);
    if (previous_utility_hook != NULL)
        previous_utility_hook(pstmt, query_string, read_only_tree, context, params, query_env, dest, qc);
    else
        standard_ProcessUtility(pstmt, query_string, read_only_tree, context, params, query_env, dest, qc);
    if (ours) {
        CommandCounterIncrement();  // see what the command did (a renamed role, say)
        follow_role_command(parsetree);
    }
}

}  // namespace

void install_role_hook() {
    previous_utility_hook = ProcessUtility_hook;
    ProcessUtility_hook = role_utility_hook;
}

}  // namespace pg_predict::pg
