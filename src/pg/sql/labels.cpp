#include "sql/labels.hpp"

#include "pg_predict/runtime/api.hpp"

namespace pg_predict::pg {

namespace {

const char* label_type(bool numeric, int count, const char* first, const char* second) {
    if (numeric) return "numeric";
    if (count == 2 && strcmp(first, "false") == 0 && strcmp(second, "true") == 0) return "boolean";
    return "text";
}

const char* task_name(bool classification, bool transformer) {
    return transformer ? "transformer" : classification ? "classification" : "regression";
}

}  // namespace

const char* label_type_of(const CatalogEntry* entry) {
    if (!entry->classification || entry->transformer) return NULL;
    return label_type(entry->classes != NULL, entry->num_classes, entry->num_classes > 0 ? entry->class_labels[0] : "",
                      entry->num_classes > 1 ? entry->class_labels[1] : "");
}

const char* label_type_of(const runtime::BuiltModel* built) {
    if (built->task != "classification") return NULL;
    const auto& labels = built->class_labels;
    return label_type(labels.empty(), (int)labels.size(), labels.size() > 0 ? labels[0].c_str() : "",
                      labels.size() > 1 ? labels[1].c_str() : "");
}

char* labels_text(const CatalogEntry* entry) {
    StringInfoData out;
    initStringInfo(&out);
    appendStringInfoChar(&out, '{');
    for (int i = 0; i < entry->num_classes && i < 10; i++)
        appendStringInfo(&out, "%s%s", i > 0 ? ", " : "", entry->class_labels[i]);
    if (entry->num_classes > 10) appendStringInfoString(&out, ", ...");
    appendStringInfoChar(&out, '}');
    return out.data;
}

void warn_on_changed_meaning(const char* name, const CatalogEntry* before, const runtime::BuiltModel* built,
                             int32 version) {
    if (before == NULL) return;
    const char* old_task = task_name(before->classification, before->transformer);
    const char* new_task = built->task.c_str();
    if (strcmp(old_task, new_task) != 0) {
        ereport(WARNING, (errmsg("model \"%s\" changes its task: version %d is a %s, version %d a %s", name, version,
                                 new_task, before->version, old_task),
                          errdetail("predict() of every caller changes meaning when the new version is deployed.")));
        return;
    }
    const char* old_labels = label_type_of(before);
    const char* new_labels = label_type_of(built);
    if (old_labels != NULL && new_labels != NULL && strcmp(old_labels, new_labels) != 0)
        ereport(WARNING, (errmsg("model \"%s\" changes the type of its labels: version %d has %s labels, version %d "
                                 "%s labels %s",
                                 name, version, new_labels, before->version, old_labels, labels_text(before)),
                          errdetail("predict() returns numbers only for numeric labels; callers of version %d's "
                                    "predict() may fail or change meaning.",
                                    before->version)));
}

}  // namespace pg_predict::pg
