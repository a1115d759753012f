#include "plan/feature_pushdown.hpp"

#include "features.hpp"
#include "plan/node_kinds.hpp"

extern "C" {
#include "access/relation.h"
#include "access/tupdesc.h"
#include "utils/builtins.h"
#include "utils/typcache.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
}

namespace pg_predict::pg {

namespace {

// A push-down decided by feature_source: input `in` reads `columns` (feature columns in the
// scan child's terms, constants for features the model ignores), or, under an Append, each of
// `scans` returns its own `columns_per_scan`.
struct Pushdown {
    BatchInput* in;
    Plan* child;             // the scan, or the Append
    List* columns;           // a scan child
    List* scans;             // an Append: its partition scans
    List* columns_per_scan;  // ... and each one's feature columns
};

// Feature Vars for a whole-row Var of relation `rtindex`, in the scan's own terms; NIL if the
// range table entry is not a plain relation. Errors (missing or non-numeric column) here are
// the plan-time errors users see.
List* feature_columns_of_relation(PlannedStmt* stmt, Index rtindex, const CatalogEntry* entry) {
    RangeTblEntry* rte = rt_fetch(rtindex, stmt->rtable);
    if (rte->rtekind != RTE_RELATION) return NIL;
    Relation relation = relation_open(rte->relid, NoLock);
    TupleDesc desc = RelationGetDescr(relation);
    AttrNumber* attnums = (AttrNumber*)palloc(sizeof(AttrNumber) * Max(entry->num_features, 1));
    resolve_feature_columns(entry, desc, RelationGetRelationName(relation), attnums);
    List* vars = NIL;
    for (int f = 0; f < entry->num_features; f++) {
        if (attnums[f] == InvalidAttrNumber) {  // a feature the model never reads: not fetched
            vars = lappend(vars, make_unread_feature());
            continue;
        }
        Form_pg_attribute attribute = TupleDescAttr(desc, attnums[f] - 1);
        vars = lappend(vars, makeVar(rtindex, attnums[f], attribute->atttypid, attribute->atttypmod,
                                     attribute->attcollation, 0));
    }
    relation_close(relation, NoLock);
    return vars;
}

// Pushes the model's feature columns into every partition's scan under `append`, at the same
// new positions in each (looked up by name: partitions may order their columns differently),
// and has the Append pass them up. Returns the features as the Append's output Vars (constants
// for features the model ignores).
List* push_features_through_append(Append* append, List* scans, List* columns_per_scan, int num_features) {
    List* features = NIL;
    for (int f = 0; f < num_features; f++) {
        Node* first = (Node*)list_nth((List*)linitial(columns_per_scan), f);
        if (is_unread_feature(first)) {  // ignored by the model: the same constant for every partition
            features = lappend(features, first);
            continue;
        }
        AttrNumber resno = list_length(append->plan.targetlist) + 1;
        ListCell* scan;
        ListCell* columns;
        forboth (scan, scans, columns, columns_per_scan) {
            Plan* child = (Plan*)lfirst(scan);
            child->targetlist = lappend(child->targetlist,
                                        makeTargetEntry((Expr*)list_nth((List*)lfirst(columns), f), resno, NULL, false));
        }
        Var* column = (Var*)first;
        Var* passed_up = makeVar(OUTER_VAR, resno, column->vartype, column->vartypmod, column->varcollid, 0);
        append->plan.targetlist = lappend(append->plan.targetlist, makeTargetEntry((Expr*)passed_up, resno, NULL, false));
        features = lappend(features, passed_up);
    }
    return features;
}

// The features of a row built from columns (a subquery's or a view's whole row, pulled up into
// the query as ROW(t.a, t.b) with its column names): each feature's column expression, matched
// by name like a table's columns, so the node reads them directly instead of forming and
// deforming a record per row. NIL when the row carries no names.
// The table column a plain Var reads (through the child's target list for an OUTER_VAR), or
// NULL when it is not one.
const char* relation_column_name(const Rewrite* rw, Node* arg) {
    if (arg == NULL || !IsA(arg, Var)) return NULL;
    Var* var = (Var*)arg;
    if (var->varno == OUTER_VAR) {
        if (rw->child == NULL || var->varattno < 1 || var->varattno > list_length(rw->child->targetlist)) return NULL;
        var = (Var*)((TargetEntry*)list_nth(rw->child->targetlist, var->varattno - 1))->expr;
        if (!IsA(var, Var)) return NULL;
    }
    if (IS_SPECIAL_VARNO(var->varno) || var->varno > list_length(rw->stmt->rtable) || var->varattno < 1) return NULL;
    RangeTblEntry* rte = rt_fetch(var->varno, rw->stmt->rtable);
    if (rte->rtekind != RTE_RELATION) return NULL;
    return get_attname(rte->relid, var->varattno, true);
}

// An explicit ROW(a, b) has the parser's field names f1, f2, ...: no names of its own.
bool has_default_field_names(const RowExpr* row) {
    int i = 1;
    ListCell* lc;
    foreach (lc, row->colnames)
        if (strcmp(strVal(lfirst(lc)), psprintf("f%d", i++)) != 0) return false;
    return true;
}

List* row_expression_columns(const Rewrite* rw, RowExpr* row, const CatalogEntry* entry) {
    int count = list_length(row->args);
    if (count == 0) return NIL;
    // Citus's shard query passes a subquery's whole row as ROW(a, b) over the shard's columns:
    // the fields that read a column are named after it (the others keep f1, f2, ...).
    List* column_names = NIL;
    if (row->row_typeid == RECORDOID && has_default_field_names(row)) {
        ListCell* arg;
        ListCell* field;
        forboth (arg, row->args, field, row->colnames) {
            const char* name = relation_column_name(rw, (Node*)lfirst(arg));
            column_names = lappend(column_names, name != NULL ? makeString(pstrdup(name)) : lfirst(field));
        }
    }
    // The names: the row's own (a subquery's), or its named type's (a view's row; dropped
    // columns are there too, as NULL arguments). The types: the arguments', which is what the
    // node reads.
    TupleDesc named = NULL;
    if (row->colnames == NIL) {
        if (row->row_typeid == RECORDOID) return NIL;
        TupleDesc typed = lookup_rowtype_tupdesc(row->row_typeid, -1);
        named = CreateTupleDescCopy(typed);
        ReleaseTupleDesc(typed);
        if (named->natts != count) return NIL;
    } else if (list_length(row->colnames) != count) {
        return NIL;
    }
    List* names = column_names != NIL ? column_names : row->colnames;
    TupleDesc desc = CreateTemplateTupleDesc(count);
    for (int i = 0; i < count; i++) {
        Node* arg = (Node*)list_nth(row->args, i);
        const char* name = named != NULL ? NameStr(TupleDescAttr(named, i)->attname) : strVal(list_nth(names, i));
        TupleDescInitEntry(desc, (AttrNumber)(i + 1), name, exprType(arg), exprTypmod(arg), 0);
        if (named != NULL) TupleDescAttr(desc, i)->attisdropped = TupleDescAttr(named, i)->attisdropped;
    }
    AttrNumber* attnums = (AttrNumber*)palloc(sizeof(AttrNumber) * Max(entry->num_features, 1));
    resolve_feature_columns(entry, desc, format_type_be(row->row_typeid), attnums);
    List* columns = NIL;
    for (int f = 0; f < entry->num_features; f++)
        columns = lappend(columns, attnums[f] == InvalidAttrNumber  // a feature the model never reads
                                       ? make_unread_feature()
                                       : (Node*)copyObjectImpl(list_nth(row->args, attnums[f] - 1)));
    return columns;
}

void decide_pushdown(Rewrite* rw, BatchInput* in, List* columns, List* scans, List* columns_per_scan) {
    Pushdown* push = (Pushdown*)palloc0(sizeof(Pushdown));
    push->in = in;
    push->child = rw->child;
    push->columns = columns;
    push->scans = scans;
    push->columns_per_scan = columns_per_scan;
    rw->pushdowns = lappend(rw->pushdowns, push);
    in->source = FeatureSource::Columns;
    in->exprs = NIL;
}

}  // namespace

List* partition_scans_returning_row(Append* append, AttrNumber attno) {
    List* scans = NIL;
    ListCell* lc;
    foreach (lc, append->appendplans) {
        Plan* child = (Plan*)lfirst(lc);
        if (!is_scan(child) || ((Scan*)child)->scanrelid == 0 ||
            list_length(child->targetlist) != list_length(append->plan.targetlist))
            return NIL;
        TargetEntry* tle = (TargetEntry*)list_nth(child->targetlist, attno - 1);
        Var* row = whole_row_var((Node*)tle->expr);
        if (row == NULL || (Index)row->varno != ((Scan*)child)->scanrelid) return NIL;
        scans = lappend(scans, child);
    }
    return scans;
}

bool feature_source(Rewrite* rw, Node* arg, const CatalogEntry* entry, BatchInput* in) {
    Node* bare = strip_relabel(arg);
    if (bare != NULL && IsA(bare, ArrayExpr) && !((ArrayExpr*)bare)->multidims && !entry->has_text) {
        List* elements = ((ArrayExpr*)bare)->elements;
        if (converter_for_type(((ArrayExpr*)bare)->element_typeid) == NULL) return false;
        if (list_length(elements) != entry->num_features)
            ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                            errmsg("model \"%s\" expects %d features, but the array has %d elements",
                                   entry->name, entry->num_features, list_length(elements))));
        in->source = FeatureSource::Columns;
        in->exprs = list_copy(elements);
        return true;
    }
    Var* whole_row = whole_row_var(arg);
    if (rw->child == NULL && whole_row != NULL && (int)whole_row->varno == rw->scanrelid) {
        List* columns = feature_columns_of_relation(rw->stmt, whole_row->varno, entry);
        if (columns != NIL) {
            in->source = FeatureSource::Columns;
            in->exprs = columns;
            return true;
        }
    }
    bool outer_var = rw->child != NULL && bare != NULL && IsA(bare, Var) && ((Var*)bare)->varno == OUTER_VAR;
    if (outer_var && is_scan(rw->child) && ((Scan*)rw->child)->scanrelid > 0) {
        TargetEntry* tle = (TargetEntry*)list_nth(rw->child->targetlist, ((Var*)bare)->varattno - 1);
        Var* scanned = whole_row_var((Node*)tle->expr);
        if (scanned != NULL && (Index)scanned->varno == ((Scan*)rw->child)->scanrelid) {
            List* columns = feature_columns_of_relation(rw->stmt, scanned->varno, entry);
            if (columns != NIL) {
                decide_pushdown(rw, in, columns, NIL, NIL);
                return true;
            }
        }
    }
    if (outer_var && IsA(rw->child, Append)) {
        List* scans = partition_scans_returning_row((Append*)rw->child, ((Var*)bare)->varattno);
        List* columns_per_scan = NIL;
        ListCell* lc;
        foreach (lc, scans) {
            List* columns = feature_columns_of_relation(rw->stmt, ((Scan*)lfirst(lc))->scanrelid, entry);
            if (columns == NIL) break;
            columns_per_scan = lappend(columns_per_scan, columns);
        }
        if (scans != NIL && list_length(columns_per_scan) == list_length(scans)) {
            decide_pushdown(rw, in, NIL, scans, columns_per_scan);
            return true;
        }
    }
    if (bare != NULL && IsA(bare, RowExpr)) {
        List* columns = row_expression_columns(rw, (RowExpr*)bare, entry);
        if (columns != NIL) {
            in->source = FeatureSource::Columns;
            in->exprs = columns;
            return true;
        }
    }
    Oid type = exprType(arg);
    if (type_is_rowtype(type)) {
        in->source = FeatureSource::Row;
        in->exprs = list_make1(arg);
        return true;
    }
    if (OidIsValid(get_element_type(getBaseType(type)))) {
        in->source = FeatureSource::Array;
        in->exprs = list_make1(arg);
        return true;
    }
    return false;
}

void apply_pushdowns(Rewrite* rw) {
    ListCell* lc;
    foreach (lc, rw->pushdowns) {
        Pushdown* push = (Pushdown*)lfirst(lc);
        if (push->scans != NIL) {
            push->in->exprs = push_features_through_append((Append*)push->child, push->scans, push->columns_per_scan,
                                                           push->in->num_features);
            continue;
        }
        List* vars = NIL;
        ListCell* e;
        foreach (e, push->columns)
            vars = lappend(vars, IsA(lfirst(e), Const)  // unread, or a constant
                                     ? lfirst(e)
                                     : outer_var_for(push->child, target_position(push->child, (Expr*)lfirst(e))));
        push->in->exprs = vars;
    }
    rw->pushdowns = NIL;
}

List* pushed_down_columns(Rewrite* rw, BatchInput* in) {
    List* out = NIL;
    ListCell* lc;
    foreach (lc, rw->pushdowns) {
        Pushdown* push = (Pushdown*)lfirst(lc);
        if (push->in != in) continue;
        if (push->scans == NIL) {
            ScannedColumns* one = (ScannedColumns*)palloc(sizeof(ScannedColumns));
            one->scan = push->child;
            one->columns = &push->columns;
            return list_make1(one);
        }
        ListCell* scan;
        ListCell* columns;
        forboth (scan, push->scans, columns, push->columns_per_scan) {
            ScannedColumns* each = (ScannedColumns*)palloc(sizeof(ScannedColumns));
            each->scan = (Plan*)lfirst(scan);
            each->columns = (List**)&lfirst(columns);
            out = lappend(out, each);
        }
        return out;
    }
    return NIL;
}

}  // namespace pg_predict::pg
