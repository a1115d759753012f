// Predicate-based model pruning at plan time (plan/predicate_specialization.hpp).
//
// A bound is on a column's SQL value; the model sees what the feature fill makes of it
// (features.cpp: the type's converter to float64, then float32 for a float32 batch; a text
// value's vocabulary index). Every converter is monotone, and the comparison operators of the
// integer, float and numeric btree families compare the mathematical values (cross-type ones
// included), so `x >= c` gives conv(x) >= conv(c): the bounds are the converted constants.
// NULL satisfies no comparison; NaN (float, numeric) is larger than every number, so `x >= c`
// lets it through (the model sees it as missing) and `x <= c` does not.
#include "plan/predicate_specialization.hpp"

#include <cmath>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "plan/feature_pushdown.hpp"
#include "features.hpp"
#include "guard.hpp"
#include "pg_predict/runtime/api.hpp"
#include "plan/node_kinds.hpp"
#include "settings.hpp"

extern "C" {
#include "access/stratnum.h"
#include "access/sysattr.h"
#include "optimizer/optimizer.h"
#include "lib/stringinfo.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
}

namespace pg_predict::pg {

namespace {

// The btree operator families whose operators compare values as the features see them (OIDs
// of pg_opfamily.dat: they are fixed): integer_ops, float_ops, numeric_ops, text_ops, bool_ops.
constexpr Oid kIntegerFamily = 1976, kFloatFamily = 1970, kNumericFamily = 1988, kTextFamily = 1994,
              kBoolFamily = 424;

// What the scan's clauses say about one column (plain C data: no destructors, see guard.hpp).
struct ColumnBound {
    double lo, hi;      // bounds of the non-missing value, as converted for the model
    bool values;        // a non-missing value may pass (false after IS NULL)
    bool null_ok;       // SQL NULL may pass
    bool nan_ok;        // a NaN value may pass (float and numeric columns)
    List* texts;        // text = 'value' or IN ('a', 'b'): the values (char*) a row may have; NIL: any
    bool text_conflict; // the text clauses admit no value: no row passes (then nothing is pruned)
    bool constrained;   // some clause said something
};

void init_bound(ColumnBound* b, Oid column_type) {
    Oid base = getBaseType(column_type);
    b->lo = -INFINITY;
    b->hi = INFINITY;
    b->values = true;
    b->null_ok = true;
    b->nan_ok = base == FLOAT4OID || base == FLOAT8OID || base == NUMERICOID;
    b->texts = NIL;
    b->text_conflict = false;
    b->constrained = false;
}

// The Var of the scanned relation under a binary-compatible relabeling (varchar as text).
Var* scan_column(Node* node, Index scanrelid) {
    node = strip_relabel(node);
    if (node == NULL || !IsA(node, Var)) return NULL;
    Var* var = (Var*)node;
    if (var->varno != (int)scanrelid || var->varlevelsup != 0 || var->varattno <= 0) return NULL;
    return var;
}

// The bounds of the scanned columns an input reads, by attno (each column once).
struct Bounds {
    Index scanrelid;
    int count;
    AttrNumber* attnos;
    ColumnBound* bounds;
};

ColumnBound* bound_of(Bounds* all, Var* var) {
    for (int i = 0; i < all->count; i++)
        if (all->attnos[i] == var->varattno) return &all->bounds[i];
    return NULL;
}

// The strategy (BTLessStrategyNumber ...) and family of a comparison operator in one of the
// families above; 0 when it is in none of them.
int comparison_strategy(Oid opno, Oid* family) {
    int strategy = 0;
    List* interpretations = get_op_btree_interpretation(opno);
    ListCell* lc;
    foreach (lc, interpretations) {
        OpBtreeInterpretation* i = (OpBtreeInterpretation*)lfirst(lc);
        if (i->strategy < BTLessStrategyNumber || i->strategy > BTGreaterStrategyNumber) continue;
        if (i->opfamily_id == kIntegerFamily || i->opfamily_id == kFloatFamily || i->opfamily_id == kNumericFamily ||
            i->opfamily_id == kTextFamily || i->opfamily_id == kBoolFamily) {
            strategy = i->strategy;
            *family = i->opfamily_id;
            break;
        }
    }
    list_free_deep(interpretations);
    return strategy;
}

int commuted(int strategy) {
    switch (strategy) {
        case BTLessStrategyNumber: return BTGreaterStrategyNumber;
        case BTLessEqualStrategyNumber: return BTGreaterEqualStrategyNumber;
        case BTGreaterEqualStrategyNumber: return BTLessEqualStrategyNumber;
        case BTGreaterStrategyNumber: return BTLessStrategyNumber;
        default: return strategy;
    }
}

void apply_number(ColumnBound* b, int strategy, double c) {
    if (std::isnan(c)) return;  // NaN sorts above every number: say nothing
    b->null_ok = false;
    b->constrained = true;
    switch (strategy) {
        case BTEqualStrategyNumber:
            b->lo = Max(b->lo, c);
            b->hi = Min(b->hi, c);
            b->nan_ok = false;
            break;
        case BTLessStrategyNumber:
        case BTLessEqualStrategyNumber:
            b->hi = Min(b->hi, c);
            b->nan_ok = false;
            break;
        default:  // > and >=: NaN passes where the column can hold it
            b->lo = Max(b->lo, c);
            break;
    }
}

bool has_text(List* texts, const char* value) {
    ListCell* lc;
    foreach (lc, texts)
        if (strcmp((const char*)lfirst(lc), value) == 0) return true;
    return false;
}

// A set of text values the column's value is in: intersected with what earlier clauses said.
void apply_texts(ColumnBound* b, List* values) {
    if (b->texts != NIL || b->text_conflict) {
        List* both = NIL;
        ListCell* lc;
        foreach (lc, values)
            if (has_text(b->texts, (const char*)lfirst(lc))) both = lappend(both, lfirst(lc));
        values = both;
    }
    b->texts = values;
    b->text_conflict = values == NIL;
    b->null_ok = false;
    b->constrained = true;
}

// column IN (constants): = ANY of a constant array, NULL elements left out (they match nothing).
void apply_in_list(Bounds* all, ScalarArrayOpExpr* in) {
    if (!in->useOr || list_length(in->args) != 2) return;
    Var* var = scan_column((Node*)linitial(in->args), all->scanrelid);
    Node* array = strip_relabel((Node*)lsecond(in->args));
    if (var == NULL || array == NULL || !IsA(array, Const) || ((Const*)array)->constisnull) return;
    ColumnBound* b = bound_of(all, var);
    Oid family = InvalidOid;
    if (b == NULL || comparison_strategy(in->opno, &family) != BTEqualStrategyNumber) return;
    Oid column_type = getBaseType(var->vartype);
    ArrayType* values = DatumGetArrayTypeP(((Const*)array)->constvalue);
    Oid element_type = ARR_ELEMTYPE(values);
    int16 length;
    bool by_value;
    char align;
    get_typlenbyvalalign(element_type, &length, &by_value, &align);
    Datum* elements;
    bool* nulls;
    int count;
    deconstruct_array(values, element_type, length, by_value, align, &elements, &nulls, &count);
    if (family == kTextFamily) {
        if ((column_type != TEXTOID && column_type != VARCHAROID) || !OidIsValid(in->inputcollid) ||
            !get_collation_isdeterministic(in->inputcollid))
            return;
        List* texts = NIL;
        for (int i = 0; i < count; i++)
            if (!nulls[i]) texts = lappend(texts, TextDatumGetCString(elements[i]));
        if (texts != NIL) apply_texts(b, texts);
        return;
    }
    FeatureConverter column = converter_for_type(column_type);
    FeatureConverter value = converter_for_type(element_type);
    if (column == NULL || value == NULL) return;
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < count; i++) {
        if (nulls[i]) continue;
        double c = value(elements[i]);
        if (std::isnan(c)) return;  // NaN sorts above every number: say nothing
        lo = Min(lo, c);
        hi = Max(hi, c);
    }
    if (lo > hi) return;  // only NULLs: no row passes
    apply_number(b, BTGreaterEqualStrategyNumber, lo);
    apply_number(b, BTLessEqualStrategyNumber, hi);
}

void apply_clause(Bounds* all, Node* clause);

void apply_operator(Bounds* all, OpExpr* op) {
    if (list_length(op->args) != 2) return;
    Node* left = (Node*)linitial(op->args);
    Node* right = (Node*)lsecond(op->args);
    Var* var = scan_column(left, all->scanrelid);
    Node* other = right;
    bool swapped = false;
    if (var == NULL) {
        var = scan_column(right, all->scanrelid);
        other = left;
        swapped = true;
    }
    other = strip_relabel(other);
    if (var == NULL || other == NULL || !IsA(other, Const)) return;
    Const* constant = (Const*)other;
    ColumnBound* b = bound_of(all, var);
    if (b == NULL) return;
    if (constant->constisnull) return;  // no row passes: say nothing
    Oid family = InvalidOid;
    int strategy = comparison_strategy(op->opno, &family);
    if (strategy == 0) return;
    if (swapped) strategy = commuted(strategy);
    Oid column_type = getBaseType(var->vartype);
    if (family == kTextFamily) {
        // Byte equality, as the dictionary looks values up: a deterministic collation only.
        if (strategy != BTEqualStrategyNumber || (column_type != TEXTOID && column_type != VARCHAROID)) return;
        if (!OidIsValid(op->inputcollid) || !get_collation_isdeterministic(op->inputcollid)) return;
        apply_texts(b, list_make1(TextDatumGetCString(constant->constvalue)));
        return;
    }
    FeatureConverter column = converter_for_type(column_type);
    FeatureConverter value = converter_for_type(constant->consttype);
    if (column == NULL || value == NULL) return;
    if (family == kBoolFamily && strategy != BTEqualStrategyNumber) return;
    double c = value(constant->constvalue);
    // Between integers x > c is x >= c + 1 (exact while c + 1 is a double without rounding).
    if (family == kIntegerFamily && std::fabs(c) < 9007199254740992.0) {
        if (strategy == BTGreaterStrategyNumber) {
            c += 1;
            strategy = BTGreaterEqualStrategyNumber;
        } else if (strategy == BTLessStrategyNumber) {
            c -= 1;
            strategy = BTLessEqualStrategyNumber;
        }
    }
    apply_number(b, strategy, c);
}

void apply_clause(Bounds* all, Node* clause) {
    if (clause == NULL) return;
    if (IsA(clause, OpExpr)) {
        apply_operator(all, (OpExpr*)clause);
    } else if (IsA(clause, ScalarArrayOpExpr)) {
        apply_in_list(all, (ScalarArrayOpExpr*)clause);
    } else if (IsA(clause, BoolExpr) && ((BoolExpr*)clause)->boolop == AND_EXPR) {
        ListCell* lc;
        foreach (lc, ((BoolExpr*)clause)->args) apply_clause(all, (Node*)lfirst(lc));
    } else if (IsA(clause, BoolExpr) && ((BoolExpr*)clause)->boolop == NOT_EXPR) {
        Var* var = scan_column((Node*)linitial(((BoolExpr*)clause)->args), all->scanrelid);
        ColumnBound* b = var != NULL && getBaseType(var->vartype) == BOOLOID ? bound_of(all, var) : NULL;
        if (b != NULL) apply_number(b, BTEqualStrategyNumber, 0.0);  // WHERE NOT flag
    } else if (IsA(clause, Var)) {
        Var* var = scan_column(clause, all->scanrelid);
        ColumnBound* b = var != NULL && getBaseType(var->vartype) == BOOLOID ? bound_of(all, var) : NULL;
        if (b != NULL) apply_number(b, BTEqualStrategyNumber, 1.0);  // WHERE flag
    } else if (IsA(clause, NullTest) && !((NullTest*)clause)->argisrow) {
        NullTest* test = (NullTest*)clause;
        Var* var = scan_column((Node*)test->arg, all->scanrelid);
        ColumnBound* b = var != NULL ? bound_of(all, var) : NULL;
        if (b == NULL) return;
        b->constrained = true;
        if (test->nulltesttype == IS_NULL) {
            b->values = false;
            b->nan_ok = false;
        } else {
            b->null_ok = false;
        }
    }
}

// The clauses a relation scan guarantees for every row it returns: its filter and its index
// conditions (rechecked where the index is lossy). NIL for other scans.
List* guaranteed_quals(Plan* scan, List* quals) {
    switch (nodeTag(scan)) {
        case T_SeqScan: case T_SampleScan: case T_TidScan: case T_TidRangeScan:
            return quals;
        case T_IndexScan:
            return list_concat(list_copy(quals), ((IndexScan*)scan)->indexqualorig);
        case T_BitmapHeapScan:
            return list_concat(list_copy(quals), ((BitmapHeapScan*)scan)->bitmapqualorig);
        default:
            return NIL;
    }
}

// "age >= 60", "plan = 'pro'", "x BETWEEN 1 AND 2", "x IS NULL" for EXPLAIN.
void describe_bound(StringInfo out, const char* column, const ColumnBound* b) {
    if (out->len > 0) appendStringInfoString(out, " AND ");
    if (b->texts != NIL) {
        appendStringInfo(out, "%s %s", quote_identifier(column), list_length(b->texts) == 1 ? "=" : "IN (");
        ListCell* lc;
        foreach (lc, b->texts)
            appendStringInfo(out, "%s%s", foreach_current_index(lc) > 0 ? ", " : list_length(b->texts) == 1 ? " " : "",
                             quote_literal_cstr((const char*)lfirst(lc)));
        if (list_length(b->texts) > 1) appendStringInfoChar(out, ')');
        return;
    }
    if (!b->values) {
        appendStringInfo(out, "%s IS NULL", quote_identifier(column));
        return;
    }
    const char* name = quote_identifier(column);
    bool low = !std::isinf(b->lo), high = !std::isinf(b->hi);
    if (low && high && b->lo == b->hi)
        appendStringInfo(out, "%s = %.15g", name, b->lo);
    else if (low && high)
        appendStringInfo(out, "%s BETWEEN %.15g AND %.15g", name, b->lo, b->hi);
    else if (low)
        appendStringInfo(out, "%s >= %.15g", name, b->lo);
    else if (high)
        appendStringInfo(out, "%s <= %.15g", name, b->hi);
    else
        appendStringInfo(out, "%s IS NOT NULL", name);
}

// One feature's bound, handed to the runtime in plain C data (guard.hpp).
struct PlainBound {
    int feature;
    const ColumnBound* bound;
};

struct SpecializationResult {
    bool pruned;
    int trees;
    int64 nodes_before, nodes_after;
    char* bounds;  // malloc'd by the runtime side, NULL when not pruned
};

// What one scan's clauses say about a feature: nothing, that no row passes, or a bound.
enum class Known { Any, NoRow, Bound };

// Per feature of `entry`, what the clauses `quals` of `scan` say about the column `columns`
// gives it (a Var of that scan, or a constant for a feature not read).
void scan_feature_bounds(Plan* scan, List* columns, List* quals, const CatalogEntry* entry, ColumnBound* out,
                         Known* known) {
    List* clauses = guaranteed_quals(scan, quals);
    Index scanrelid = ((Scan*)scan)->scanrelid;
    // Only the columns a clause mentions can be bounded (a row read by a key that is no feature
    // bounds none): the others need no bound to start from.
    Bitmapset* mentioned = NULL;
    pull_varattnos((Node*)clauses, scanrelid, &mentioned);
    Bounds all;
    all.scanrelid = scanrelid;
    all.count = 0;
    all.attnos = (AttrNumber*)palloc0(sizeof(AttrNumber) * Max(entry->num_features, 1));
    all.bounds = (ColumnBound*)palloc0(sizeof(ColumnBound) * Max(entry->num_features, 1));
    int* feature_slot = (int*)palloc(sizeof(int) * Max(entry->num_features, 1));
    for (int f = 0; f < entry->num_features; f++) {
        feature_slot[f] = -1;
        Var* var = scan_column((Node*)list_nth(columns, f), scanrelid);
        if (var == NULL || entry->is_unused[f] ||
            !bms_is_member(var->varattno - FirstLowInvalidHeapAttributeNumber, mentioned))
            continue;
        int slot = -1;
        for (int i = 0; i < all.count; i++)
            if (all.attnos[i] == var->varattno) slot = i;
        if (slot < 0) {
            slot = all.count++;
            all.attnos[slot] = var->varattno;
            init_bound(&all.bounds[slot], var->vartype);
        }
        feature_slot[f] = slot;
    }
    ListCell* lc;
    foreach (lc, clauses) apply_clause(&all, (Node*)lfirst(lc));
    for (int f = 0; f < entry->num_features; f++) {
        known[f] = Known::Any;
        if (feature_slot[f] < 0) continue;
        ColumnBound b = all.bounds[feature_slot[f]];
        b.values = b.values && b.lo <= b.hi && !b.text_conflict;
        if (!b.constrained) continue;
        known[f] = !b.values && !b.null_ok && !b.nan_ok ? Known::NoRow : Known::Bound;
        out[f] = b;
    }
}

// The smallest bound holding wherever a or b does (a partition's rows or another's).
void widen(ColumnBound* a, const ColumnBound* b) {
    if (a->values && b->values)
        a->texts = a->texts != NIL && b->texts != NIL ? list_concat_copy(a->texts, b->texts) : NIL;
    else if (b->values)
        a->texts = b->texts;
    a->lo = !a->values ? b->lo : !b->values ? a->lo : Min(a->lo, b->lo);
    a->hi = !a->values ? b->hi : !b->values ? a->hi : Max(a->hi, b->hi);
    a->values = a->values || b->values;
    a->null_ok = a->null_ok || b->null_ok;
    a->nan_ok = a->nan_ok || b->nan_ok;
}

// A scan the input's features come from: its feature columns and the clauses it applies.
struct Target {
    Plan* scan;
    List** columns;
    List* quals;
};

// targets: Target*, one per scan (each partition's under an Append); the bounds used hold for
// the rows of every one of them.
void specialize_input(List* targets, BatchInput* in) {
    const CatalogEntry* entry = in->entry;
    if (targets == NIL || entry == NULL || in->output != ModelOutput::Stored || entry->transformer ||
        entry->trees <= 0 || strcmp(entry->format, "torchscript") == 0)
        return;
    int features = Max(entry->num_features, 1);
    ColumnBound* merged = (ColumnBound*)palloc0(sizeof(ColumnBound) * features);
    Known* state = (Known*)palloc(sizeof(Known) * features);
    ColumnBound* one = (ColumnBound*)palloc0(sizeof(ColumnBound) * features);
    Known* known = (Known*)palloc(sizeof(Known) * features);
    for (int f = 0; f < entry->num_features; f++) state[f] = Known::NoRow;
    ListCell* lc;
    foreach (lc, targets) {
        Target* target = (Target*)lfirst(lc);
        if (list_length(*target->columns) != entry->num_features) return;
        scan_feature_bounds(target->scan, *target->columns, target->quals, entry, one, known);
        for (int f = 0; f < entry->num_features; f++) {
            if (state[f] == Known::Any || known[f] == Known::NoRow) continue;
            if (known[f] == Known::Any)
                state[f] = Known::Any;
            else if (state[f] == Known::NoRow) {
                state[f] = Known::Bound;
                merged[f] = one[f];
            } else {
                widen(&merged[f], &one[f]);
            }
        }
    }

    // The bounds that say something, per feature of the right kind.
    PlainBound* plain = (PlainBound*)palloc0(sizeof(PlainBound) * features);
    int count = 0;
    StringInfoData note;
    initStringInfo(&note);
    for (int f = 0; f < entry->num_features; f++) {
        if (state[f] != Known::Bound) continue;  // nothing known, or no row at all (nothing to gain)
        const ColumnBound* b = &merged[f];
        bool missing = b->null_ok || b->nan_ok;
        if (entry->is_text[f] ? (b->texts == NIL && b->values) : b->texts != NIL) continue;
        if (!entry->is_text[f] && b->values && missing && std::isinf(b->lo) && std::isinf(b->hi)) continue;
        plain[count].feature = f;
        plain[count].bound = b;
        count++;
        describe_bound(&note, entry->columns[f], b);
    }
    if (count == 0) return;

    int64 id = entry->id;
    if (!guarded([&] { return runtime::specialization_spec_loaded(id); })) {
        char* spec = catalog_spec(id);
        size_t length = strlen(spec);
        guarded([&] { runtime::load_specialization_spec(id, spec, length); });
        pfree(spec);
    }
    bool* unread = (bool*)palloc0(sizeof(bool) * Max(entry->num_features, 1));
    int num_features = entry->num_features;
    SpecializationResult result = guarded([&] {
        std::vector<runtime::InputBound> bounds;
        for (int i = 0; i < count; i++) {
            const ColumnBound* b = plain[i].bound;
            runtime::InputBound r;
            r.input = plain[i].feature;
            if (b->texts != NIL) {
                r.is_text = true;
                ListCell* lc;
                foreach (lc, b->texts) r.texts.push_back((const char*)lfirst(lc));
            } else {
                r.lo = b->lo;
                r.hi = b->hi;
                r.values = b->values;
                r.missing = b->null_ok || b->nan_ok;
            }
            bounds.push_back(std::move(r));
        }
        const std::string text = runtime::encode_bounds(bounds);
        const runtime::SpecializationSummary summary = runtime::plan_specialization(id, text);
        SpecializationResult r{summary.pruned, summary.trees, summary.nodes_before, summary.nodes_after, nullptr};
        if (!summary.pruned) return r;
        for (int32_t f : summary.unused_inputs)
            if (f >= 0 && f < num_features) unread[f] = true;
        r.bounds = strdup(text.c_str());
        if (r.bounds == nullptr) throw std::bad_alloc();
        return r;
    });
    if (!result.pruned) return;
    in->pruned_bounds = pstrdup(result.bounds);
    free(result.bounds);

    // Columns the specialized model does not read: constants, as for unused features. Not when
    // the version has a cascade: its small model may read such a column (pg_predict.cascades can
    // be turned on after planning; a new cascade replans, as every catalog change does), and must
    // see its value, as the per-row path does.
    StringInfoData dropped;
    initStringInfo(&dropped);
    const bool has_cascade = catalog_cascade_program_id(entry->id) != 0;
    for (int f = 0; f < entry->num_features && !has_cascade; f++) {
        if (!unread[f] || entry->is_unused[f]) continue;
        bool was_read = false;
        foreach (lc, targets) {
            List* columns = *((Target*)lfirst(lc))->columns;
            if (is_unread_feature((Node*)list_nth(columns, f))) continue;
            lfirst(list_nth_cell(columns, f)) = make_unread_feature();
            was_read = true;
        }
        if (was_read)
            appendStringInfo(&dropped, "%s%s", dropped.len > 0 ? ", " : "", quote_identifier(entry->columns[f]));
    }
    in->pruned_note = psprintf("%s (trees %d, nodes " INT64_FORMAT " -> " INT64_FORMAT "%s%s%s)", note.data,
                               result.trees, result.nodes_before, result.nodes_after,
                               dropped.len > 0 ? (strchr(dropped.data, ',') ? "; columns " : "; column ") : "",
                               dropped.data, dropped.len > 0 ? " not read" : "");
}

}  // namespace

void specialize_inputs(Rewrite* rw, List* scan_quals) {
    if (!prune_models) return;
    ListCell* lc;
    foreach (lc, rw->inputs) {
        BatchInput* in = (BatchInput*)lfirst(lc);
        List* targets = NIL;
        if (rw->child == NULL) {
            // Case 1: the node over a scan that evaluated the call itself, its own feature list
            if (rw->scanrelid <= 0 || in->source != FeatureSource::Columns) continue;
            Target* t = (Target*)palloc(sizeof(Target));
            t->scan = rw->node;
            t->columns = &in->exprs;
            t->quals = scan_quals;
            targets = list_make1(t);
        } else {
            // Case 2: the scan child, or each partition's scan under an Append
            ListCell* sc;
            foreach (sc, pushed_down_columns(rw, in)) {
                ScannedColumns* scanned = (ScannedColumns*)lfirst(sc);
                Target* t = (Target*)palloc(sizeof(Target));
                t->scan = scanned->scan;
                t->columns = scanned->columns;
                t->quals = scanned->scan->qual;
                targets = lappend(targets, t);
            }
        }
        specialize_input(targets, in);
    }
}

}  // namespace pg_predict::pg
