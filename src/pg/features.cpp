#include "features.hpp"

#include <cmath>

#include "guard.hpp"
#include "pg_predict/runtime/api.hpp"

extern "C" {
#include "mb/pg_wchar.h"
#include "nodes/makefuncs.h"
#include "utils/arrayaccess.h"
}

namespace pg_predict::pg {

namespace {

double from_int2(Datum v) { return DatumGetInt16(v); }
double from_int4(Datum v) { return DatumGetInt32(v); }
double from_int8(Datum v) { return (double)DatumGetInt64(v); }
double from_float4(Datum v) { return DatumGetFloat4(v); }
double from_float8(Datum v) { return DatumGetFloat8(v); }
double from_bool(Datum v) { return DatumGetBool(v) ? 1.0 : 0.0; }
double from_numeric(Datum v) { return DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, v)); }

const char* const numeric_types_hint =
    "Features must be smallint, integer, bigint, real, double precision, numeric or boolean.";

// The feature types and how pg_type stores them, known without a catalog lookup: read_array
// runs once per row on the per-row path, where two syscache lookups cost as much as a stump.
struct BuiltinFeatureType {
    FeatureConverter convert;
    int16 length;
    bool by_value;
    char align;
};

bool builtin_feature_type(Oid type, BuiltinFeatureType* out) {
    switch (type) {
        case INT2OID: *out = {from_int2, sizeof(int16), true, TYPALIGN_SHORT}; return true;
        case INT4OID: *out = {from_int4, sizeof(int32), true, TYPALIGN_INT}; return true;
        case INT8OID: *out = {from_int8, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE}; return true;
        case FLOAT4OID: *out = {from_float4, sizeof(float4), true, TYPALIGN_INT}; return true;
        case FLOAT8OID: *out = {from_float8, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE}; return true;
        case NUMERICOID: *out = {from_numeric, -1, false, TYPALIGN_INT}; return true;
        case BOOLOID: *out = {from_bool, sizeof(bool), true, TYPALIGN_CHAR}; return true;
        default: return false;
    }
}

// Whether some field of the row has no name: ROW(...) calls field i "fi" (a field read from a
// table column is named after it, feature_pushdown.cpp).
bool has_anonymous_fields(TupleDesc tupdesc) {
    for (int a = 0; a < tupdesc->natts; a++) {
        char anonymous[16];
        snprintf(anonymous, sizeof anonymous, "f%d", a + 1);
        if (strcmp(NameStr(TupleDescAttr(tupdesc, a)->attname), anonymous) == 0) return true;
    }
    return false;
}

}  // namespace

FeatureConverter converter_for_type(Oid type) {
    BuiltinFeatureType builtin;
    return builtin_feature_type(getBaseType(type), &builtin) ? builtin.convert : NULL;
}

bool is_text_type(Oid type) {
    char category;
    bool preferred;
    get_type_category_preferred(getBaseType(type), &category, &preferred);
    return category == TYPCATEGORY_STRING;
}

bool is_blank_padded(Oid type) { return getBaseType(type) == BPCHAROID; }

float encode_text_feature(const BoundModel* model, int feature, Datum value, const char* column, bool blank_padded) {
    text* string = DatumGetTextPP(value);
    char* bytes = VARDATA_ANY(string);
    size_t length = VARSIZE_ANY_EXHDR(string);
    if (blank_padded) length = (size_t)bpchartruelen(bytes, (int)length);
    int32 index;
    const int encoding = GetDatabaseEncoding();  // the vocabulary is UTF-8
    if (encoding != PG_UTF8 && encoding != PG_SQL_ASCII) {
        char* utf8 = pg_server_to_any(bytes, (int)length, PG_UTF8);
        index = runtime::encode_text(model->text_encoder, feature, utf8, strlen(utf8));
        if (utf8 != bytes) pfree(utf8);  // a copy a row: not left for the query's end
    } else {
        index = runtime::encode_text(model->text_encoder, feature, bytes, length);
    }
    if (index >= 0) return (float)index;
    if (runtime::unknown_text_is_error(model->text_encoder, feature))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("model \"%s\" does not know the value \"%.*s\" of column \"%s\"",
                               model->entry->name, (int)Min(length, 200), bytes, column),
                        errdetail("Its encoder was fitted with handle_unknown='error'.")));
    return runtime::unknown_text_is_missing(model->text_encoder, feature) ? NAN : -1.0f;
}

namespace {

// A text value's bytes as the vectorizers read them: detoasted, a char(n)'s padding trimmed, and
// in UTF-8 (scikit-learn reads Unicode: a database in another encoding is converted; SQL_ASCII
// has no encoding to convert from, so its bytes must be UTF-8, or the row is an error).
struct Utf8Text {
    const char* bytes;
    size_t length;
    text* string;           // detoasted (a copy where it differs from the value's pointer)
    const char* converted;  // a converted copy, or NULL
};

Utf8Text utf8_text(Datum value, bool blank_padded) {
    Utf8Text t;
    t.string = DatumGetTextPP(value);
    t.bytes = VARDATA_ANY(t.string);
    t.length = VARSIZE_ANY_EXHDR(t.string);
    if (blank_padded) t.length = (size_t)bpchartruelen((char*)t.bytes, (int)t.length);
    t.converted = NULL;
    const int encoding = GetDatabaseEncoding();
    if (encoding != PG_UTF8 && encoding != PG_SQL_ASCII) {
        t.converted = pg_server_to_any(t.bytes, (int)t.length, PG_UTF8);
        if (t.converted == t.bytes) t.converted = NULL;  // nothing to convert (ASCII)
        else t.bytes = t.converted, t.length = strlen(t.converted);
    }
    return t;
}

// Copies of a row (converted, or a long document detoasted): not left for the query's end.
void release_utf8_text(const Utf8Text& t, Datum value) {
    if (t.converted != NULL) pfree((void*)t.converted);
    if ((Pointer)t.string != DatumGetPointer(value)) pfree(t.string);
}

double* scratch_values(int n) {
    static double* out = NULL;  // one row at a time (a backend is one thread)
    static int32 out_size = 0;
    if (n > out_size) {
        out = out == NULL ? (double*)MemoryContextAlloc(TopMemoryContext, sizeof(double) * n)
                          : (double*)repalloc(out, sizeof(double) * n);
        out_size = n;
    }
    return out;
}

template <typename Feature>
void read_text_into(const BoundModel* model, int f, Datum value, bool isnull, const char* column, bool blank_padded,
                    Feature* x) {
    const int32* slots = NULL;
    const int32 k = model->text_encoder != NULL ? runtime::text_vectorizer_slots(model->text_encoder, f, &slots) : -1;
    if (k < 0) {
        x[f] = isnull ? (Feature)NAN : (Feature)encode_text_feature(model, f, value, column, blank_padded);
        return;
    }
    if (k == 0) return;
    // A cascade's own projection of the same terms, where the row's side values are wanted.
    CascadeText* cascade = model->cascade_text;
    runtime::TextProjection* projection = cascade != NULL && cascade->side != NULL ? cascade->projection[f] : NULL;
    if (isnull) {
        for (int i = 0; i < k; i++) x[slots[i]] = (Feature)NAN;
        if (projection != NULL)
            for (int i = 0; i < cascade->width_of[f]; i++) cascade->side[cascade->column[f] + i] = NAN;
        return;
    }
    const Utf8Text t = utf8_text(value, blank_padded);
    double* values = scratch_values(k + (projection != NULL ? cascade->width_of[f] : 0));
    runtime::TextEncoder* encoder = model->text_encoder;
    guarded([&] {
        if (projection != NULL)
            runtime::vectorize_text_twice(encoder, f, t.bytes, t.length, values, projection, values + k);
        else
            runtime::vectorize_text(encoder, f, t.bytes, t.length, values);
    });
    release_utf8_text(t, value);
    for (int i = 0; i < k; i++) x[slots[i]] = (Feature)values[i];
    if (projection != NULL)
        for (int i = 0; i < cascade->width_of[f]; i++) cascade->side[cascade->column[f] + i] = (float)values[k + i];
}

}  // namespace

void read_text_projected(const BoundModel* model, int f, Datum value, bool isnull, bool blank_padded,
                         runtime::TextProjection* projection, int width, float* out) {
    if (isnull) {
        for (int i = 0; i < width; i++) out[i] = NAN;
        return;
    }
    const Utf8Text t = utf8_text(value, blank_padded);
    double* values = scratch_values(width);
    runtime::TextEncoder* encoder = model->text_encoder;
    guarded([&] { runtime::vectorize_text_twice(encoder, f, t.bytes, t.length, NULL, projection, values); });
    release_utf8_text(t, value);
    for (int i = 0; i < width; i++) out[i] = (float)values[i];
}

std::string_view text_bytes_copy(Datum value, bool blank_padded, MemoryContext context) {
    const Utf8Text t = utf8_text(value, blank_padded);
    char* copy = (char*)MemoryContextAlloc(context, t.length + 1);
    memcpy(copy, t.bytes, t.length);
    copy[t.length] = '\0';
    release_utf8_text(t, value);
    return std::string_view(copy, t.length);
}

void read_text_feature(const BoundModel* model, int f, Datum value, bool isnull, const char* column, bool blank_padded,
                       float* x) {
    read_text_into(model, f, value, isnull, column, blank_padded, x);
}

void read_text_feature(const BoundModel* model, int f, Datum value, bool isnull, const char* column, bool blank_padded,
                       double* x) {
    read_text_into(model, f, value, isnull, column, blank_padded, x);
}

bool is_vectorized_feature(const BoundModel* model, int f) {
    const int32* slots = NULL;
    return model->text_encoder != NULL && runtime::text_vectorizer_slots(model->text_encoder, f, &slots) >= 0;
}

Node* make_unread_feature() { return (Node*)makeNullConst(VOIDOID, -1, InvalidOid); }

bool is_unread_feature(const Node* expr) {
    return expr != NULL && IsA(expr, Const) && ((const Const*)expr)->consttype == VOIDOID;
}

void resolve_feature_columns(const CatalogEntry* entry, TupleDesc tupdesc, const char* row_type,
                             AttrNumber* attnums) {
    for (int f = 0; f < entry->num_features; f++) {
        const char* column = entry->columns[f];
        if (entry->is_unused[f]) {  // never read: the row need not have it
            attnums[f] = InvalidAttrNumber;
            continue;
        }
        if (column[0] == '\0')
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                            errmsg("model \"%s\" has no feature names, so it cannot read a row",
                                   entry->name),
                            errhint("Pass the features as an array in the model's input order, or register "
                                    "it again (a new version) with options => '{\"features\": [\"column\", ...]}'.")));
        AttrNumber found = InvalidAttrNumber;
        for (int a = 0; a < tupdesc->natts; a++) {
            Form_pg_attribute attribute = TupleDescAttr(tupdesc, a);
            if (!attribute->attisdropped && strcmp(NameStr(attribute->attname), column) == 0) {
                found = attribute->attnum;
                break;
            }
        }
        if (found == InvalidAttrNumber && has_anonymous_fields(tupdesc))
            // Citus sends a subquery's or a view's row to its workers as ROW(...): a constant
            // column's name stays behind on the coordinator.
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                            errmsg("model \"%s\" needs column \"%s\", which record does not have",
                                   entry->name, column),
                            errdetail("The row has fields without a name (ROW(...) calls them f1, f2, ...; "
                                      "Citus sends the row of a subquery or a view to its workers as "
                                      "ROW(...), where a constant column loses its name)."),
                            errhint("Cast the row to a composite type whose fields are the model's columns, "
                                    "e.g. predict('%s', ROW(...)::my_type), or score the table's own row.",
                                    entry->name)));
        if (found == InvalidAttrNumber)
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                            errmsg("model \"%s\" needs column \"%s\", which %s does not have",
                                   entry->name, column, row_type),
                            errhint("Rename the column, or map the feature to a column with "
                                    "options => '{\"columns\": {\"%s\": \"...\"}}'.",
                                    entry->features[f])));
        Oid column_type = TupleDescAttr(tupdesc, found - 1)->atttypid;
        if (entry->is_text[f]) {
            if (!is_text_type(column_type))
                ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                                errmsg("column \"%s\" of %s has type %s, but model \"%s\" reads it as "
                                       "text",
                                       column, row_type, format_type_be(column_type), entry->name),
                                errhint("Cast the column to text, e.g. in a view.")));
            attnums[f] = found;
            continue;
        }
        if (converter_for_type(column_type) == NULL)
            ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                            errmsg("column \"%s\" of %s has type %s, which model \"%s\" cannot "
                                   "read as a feature",
                                   column, row_type, format_type_be(column_type), entry->name),
                            errhint("%s", numeric_types_hint)));
        attnums[f] = found;
    }
}

RowReader* make_row_reader(const BoundModel* model, Oid type_id, int32 typmod,
                           MemoryContext context) {
    const CatalogEntry* entry = model->entry;
    MemoryContext old = MemoryContextSwitchTo(context);
    RowReader* reader = (RowReader*)palloc0(sizeof(RowReader));
    reader->type_id = type_id;
    reader->typmod = typmod;
    reader->tupdesc = lookup_rowtype_tupdesc_copy(type_id, typmod);
    reader->num_features = entry->num_features;
    reader->attnums = (AttrNumber*)palloc0(sizeof(AttrNumber) * Max(entry->num_features, 1));
    reader->convert = (FeatureConverter*)palloc0(sizeof(FeatureConverter) * Max(entry->num_features, 1));
    reader->blank_padded = (bool*)palloc0(sizeof(bool) * Max(entry->num_features, 1));
    reader->values = (Datum*)palloc0(sizeof(Datum) * Max(reader->tupdesc->natts, 1));
    reader->nulls = (bool*)palloc0(sizeof(bool) * Max(reader->tupdesc->natts, 1));
    resolve_feature_columns(entry, reader->tupdesc, format_type_be(type_id), reader->attnums);
    for (int f = 0; f < entry->num_features; f++)
        if (reader->attnums[f] != InvalidAttrNumber) {
            Oid type = TupleDescAttr(reader->tupdesc, reader->attnums[f] - 1)->atttypid;
            reader->convert[f] = converter_for_type(type);
            reader->blank_padded[f] = is_blank_padded(type);
        }
    MemoryContextSwitchTo(old);
    return reader;
}

template <typename Feature>
void read_row(const BoundModel* model, const RowReader* reader, HeapTupleHeader row, Feature* x) {
    HeapTupleData tuple;
    tuple.t_len = HeapTupleHeaderGetDatumLength(row);
    ItemPointerSetInvalid(&tuple.t_self);
    tuple.t_tableOid = InvalidOid;
    tuple.t_data = row;
    // heap_getattr finds a column behind a NULL by walking the row from its start, for every
    // feature: a row with NULLs is deformed once instead.
    bool deformed = HeapTupleHasNulls(&tuple);
    if (deformed) heap_deform_tuple(&tuple, reader->tupdesc, reader->values, reader->nulls);
    for (int f = 0; f < reader->num_features; f++) {
        if (reader->attnums[f] == InvalidAttrNumber) {  // unused by the model
            x[f] = 0;
            continue;
        }
        bool isnull;
        Datum value;
        if (deformed) {
            value = reader->values[reader->attnums[f] - 1];
            isnull = reader->nulls[reader->attnums[f] - 1];
        } else {
            value = heap_getattr(&tuple, reader->attnums[f], reader->tupdesc, &isnull);
        }
        if (reader->convert[f] != NULL)
            x[f] = isnull ? (Feature)NAN : (Feature)reader->convert[f](value);
        else
            read_text_feature(model, f, value, isnull, model->entry->columns[f], reader->blank_padded[f], x);
    }
    check_finite(model, x, 1, reader->num_features);
}

template <typename Feature>
void read_array(const BoundModel* model, ArrayType* array, Feature* x) {
    const CatalogEntry* entry = model->entry;
    if (entry->has_text)
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("model \"%s\" has text inputs, so it cannot read an array", entry->name),
                        errhint("Pass the table's row, as in predict('%s', t) FROM t.", entry->name)));
    Oid element_type = ARR_ELEMTYPE(array);
    BuiltinFeatureType element;
    if (!builtin_feature_type(element_type, &element)) {  // a domain over one, or no feature type
        element.convert = converter_for_type(element_type);
        if (element.convert == NULL)
            ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                            errmsg("model \"%s\" cannot read an array of %s", entry->name,
                                   format_type_be(element_type)),
                            errhint("%s", numeric_types_hint)));
        get_typlenbyvalalign(element_type, &element.length, &element.by_value, &element.align);
    }
    if (ARR_NDIM(array) > 1)
        ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                        errmsg("model \"%s\" needs a one-dimensional feature array, not %d "
                               "dimensions", entry->name, ARR_NDIM(array))));
    int count = ArrayGetNItems(ARR_NDIM(array), ARR_DIMS(array));
    if (count != entry->num_features)
        ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                        errmsg("model \"%s\" expects %d features, but the array has %d elements",
                               entry->name, entry->num_features, count)));
    // Walked in place (no deconstruct_array: nothing allocated per call).
    array_iter iter;
    array_iter_setup(&iter, (AnyArrayType*)array);
    for (int f = 0; f < count; f++) {
        bool isnull;
        Datum value = array_iter_next(&iter, &isnull, f, element.length, element.by_value, element.align);
        if (entry->is_unused[f])
            x[f] = 0;  // never read: not looked at, as a row's column is not (a NULL there voids nothing)
        else
            x[f] = isnull ? NAN : (Feature)element.convert(value);
    }
    check_finite(model, x, 1, count);
}

template <typename Feature>
void check_finite(const BoundModel* model, const Feature* x, size_t rows, int features) {
    const size_t cells = rows * (size_t)features;
    bool any = false;
    for (size_t i = 0; i < cells; i++) any |= std::isinf(x[i]);  // no branch: vectorizes
    if (!any) return;
    size_t i = 0;
    while (!std::isinf(x[i])) i++;
    const CatalogEntry* entry = model->entry;
    const int f = (int)(i % (size_t)features);
    const char* column = entry->columns != NULL && entry->columns[f] != NULL && entry->columns[f][0] != '\0'
                             ? entry->columns[f]
                             : NULL;
    ereport(ERROR,
            (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
             column != NULL ? errmsg("model \"%s\": input \"%s\" is %sInfinity", entry->name, column,
                                     x[i] < 0 ? "-" : "")
                            : errmsg("model \"%s\": input %d is %sInfinity", entry->name, f + 1, x[i] < 0 ? "-" : ""),
             errdetail("Infinite inputs are refused, as XGBoost and scikit-learn refuse them. A model that reads "
                       "float32 (tree models without featurizers) also sees any value beyond ±3.4e38 as Infinity."),
             errhint("Pass NULL for a missing value, or bound the column, as in LEAST(GREATEST(x, -1e30), 1e30).")));
}

template void check_finite<float>(const BoundModel*, const float*, size_t, int);
template void check_finite<double>(const BoundModel*, const double*, size_t, int);
template void read_row<float>(const BoundModel*, const RowReader*, HeapTupleHeader, float*);
template void read_row<double>(const BoundModel*, const RowReader*, HeapTupleHeader, double*);
template void read_array<float>(const BoundModel*, ArrayType*, float*);
template void read_array<double>(const BoundModel*, ArrayType*, double*);

}  // namespace pg_predict::pg
