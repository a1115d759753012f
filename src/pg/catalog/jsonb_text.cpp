#include "catalog/jsonb_text.hpp"

extern "C" {
#include "common/jsonapi.h"
#include "mb/pg_wchar.h"
#include "utils/json.h"
#include "utils/jsonfuncs.h"
#include "utils/numeric.h"
}

namespace pg_predict::pg {

namespace {

// Values between interrupt checks: a few ms of work either way.
constexpr uint32 kValuesPerCheck = 1 << 14;

void append_scalar(StringInfo out, const JsonbValue& v) {
    switch (v.type) {
        case jbvNull: appendStringInfoString(out, "null"); break;
        case jbvBool: appendStringInfoString(out, v.val.boolean ? "true" : "false"); break;
        case jbvString: {
            char* s = pnstrdup(v.val.string.val, v.val.string.len);
            escape_json(out, s);
            pfree(s);
            break;
        }
        case jbvNumeric: {
            char* s = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v.val.numeric)));
            appendStringInfoString(out, s);
            pfree(s);
            break;
        }
        default: elog(ERROR, "pg_predict: unexpected jsonb value type %d", (int)v.type);
    }
}

struct ParseState {
    JsonbParseState* parse;
    JsonbValue* result;
    uint32 values;
};

void poll(ParseState* s) {
    if (++s->values % kValuesPerCheck == 0) CHECK_FOR_INTERRUPTS();
}

void object_start(void* state) {
    ParseState* s = (ParseState*)state;
    poll(s);
    s->result = pushJsonbValue(&s->parse, WJB_BEGIN_OBJECT, NULL);
}

void object_end(void* state) {
    ParseState* s = (ParseState*)state;
    s->result = pushJsonbValue(&s->parse, WJB_END_OBJECT, NULL);
}

void array_start(void* state) {
    ParseState* s = (ParseState*)state;
    poll(s);
    s->result = pushJsonbValue(&s->parse, WJB_BEGIN_ARRAY, NULL);
}

void array_end(void* state) {
    ParseState* s = (ParseState*)state;
    s->result = pushJsonbValue(&s->parse, WJB_END_ARRAY, NULL);
}

int checked_length(size_t length) {
    if (length > JENTRY_OFFLENMASK)
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("string too long to represent as jsonb string"),
                        errdetail("Due to an implementation restriction, jsonb strings cannot exceed %d bytes.",
                                  JENTRY_OFFLENMASK)));
    return (int)length;
}

void field_start(void* state, char* name, bool) {
    ParseState* s = (ParseState*)state;
    JsonbValue key;
    key.type = jbvString;
    key.val.string.len = checked_length(strlen(name));
    key.val.string.val = name;
    s->result = pushJsonbValue(&s->parse, WJB_KEY, &key);
}

void scalar(void* state, char* token, JsonTokenType type) {
    ParseState* s = (ParseState*)state;
    poll(s);
    JsonbValue v;
    switch (type) {
        case JSON_TOKEN_STRING:
            v.type = jbvString;
            v.val.string.len = checked_length(strlen(token));
            v.val.string.val = token;
            break;
        case JSON_TOKEN_NUMBER:
            v.type = jbvNumeric;
            v.val.numeric = DatumGetNumeric(
                DirectFunctionCall3(numeric_in, CStringGetDatum(token), ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)));
            break;
        case JSON_TOKEN_TRUE: v.type = jbvBool; v.val.boolean = true; break;
        case JSON_TOKEN_FALSE: v.type = jbvBool; v.val.boolean = false; break;
        case JSON_TOKEN_NULL: v.type = jbvNull; break;
        default: elog(ERROR, "pg_predict: unexpected JSON token type %d", (int)type);
    }
    if (s->parse == NULL) {  // the whole document is one scalar: jsonb's raw-scalar array
        JsonbValue wrapper;
        wrapper.type = jbvArray;
        wrapper.val.array.rawScalar = true;
        wrapper.val.array.nElems = 1;
        pushJsonbValue(&s->parse, WJB_BEGIN_ARRAY, &wrapper);
        pushJsonbValue(&s->parse, WJB_ELEM, &v);
        s->result = pushJsonbValue(&s->parse, WJB_END_ARRAY, NULL);
    } else {
        s->result = pushJsonbValue(&s->parse, s->parse->contVal.type == jbvArray ? WJB_ELEM : WJB_VALUE, &v);
    }
}

}  // namespace

char* jsonb_to_text(Jsonb* document) {
    StringInfoData out;
    initStringInfo(&out);
    JsonbIterator* it = JsonbIteratorInit(&document->root);
    JsonbValue v;
    JsonbIteratorToken token;
    bool need_comma = false, after_key = false, raw_scalar = false;
    uint32 values = 0;
    while ((token = JsonbIteratorNext(&it, &v, false)) != WJB_DONE) {
        if (++values % kValuesPerCheck == 0) CHECK_FOR_INTERRUPTS();
        switch (token) {
            case WJB_BEGIN_ARRAY:
            case WJB_BEGIN_OBJECT:
                if (token == WJB_BEGIN_ARRAY && v.val.array.rawScalar) {
                    raw_scalar = true;  // only ever the whole document
                    break;
                }
                if (need_comma && !after_key) appendStringInfoChar(&out, ',');
                appendStringInfoChar(&out, token == WJB_BEGIN_ARRAY ? '[' : '{');
                need_comma = after_key = false;
                break;
            case WJB_END_ARRAY:
            case WJB_END_OBJECT:
                if (!raw_scalar) appendStringInfoChar(&out, token == WJB_END_ARRAY ? ']' : '}');
                need_comma = true;
                break;
            case WJB_KEY:
                if (need_comma) appendStringInfoChar(&out, ',');
                append_scalar(&out, v);
                appendStringInfoChar(&out, ':');
                after_key = true;
                break;
            case WJB_VALUE:
            case WJB_ELEM:
                if (need_comma && !after_key) appendStringInfoChar(&out, ',');
                append_scalar(&out, v);
                need_comma = true;
                after_key = false;
                break;
            case WJB_DONE: break;
        }
    }
    return out.data;
}

Datum text_to_jsonb(const char* json) {
    ParseState state{NULL, NULL, 0};
    JsonSemAction sem;
    memset(&sem, 0, sizeof(sem));
    sem.semstate = &state;
    sem.object_start = object_start;
    sem.object_end = object_end;
    sem.array_start = array_start;
    sem.array_end = array_end;
    sem.object_field_start = field_start;
    sem.scalar = scalar;
    JsonLexContext* lex = makeJsonLexContextCstringLen((char*)json, (int)strlen(json), GetDatabaseEncoding(), true);
    pg_parse_json_or_ereport(lex, &sem);
    return JsonbPGetDatum(JsonbValueToJsonb(state.result));
}

}  // namespace pg_predict::pg
