// XGBoost's scikit-learn estimators (XGBClassifier, XGBRegressor) as the last step of a
// document: the fitted booster, as Booster.save_model writes its JSON, under "booster". The
// trees are read by the XGBoost importer itself (importers/xgboost_json.cpp), so such a step scores
// exactly like the booster registered alone; the document adds the featurizers in front (e.g.
// the one-hot encoding of text columns that train() learns) and the class labels.
#include <string>

#include "handlers.hpp"
#include "pg_predict/importers/import.hpp"

namespace pg_predict::importers::sklearn {

namespace {

void booster_step(const JsonReader& step, int32_t num_features, spec::Pipeline& p, bool classifier) {
    need_task(step, p, classifier);
    const JsonReader booster = step.object("booster");
    spec::Pipeline b = import_xgboost(booster.value());
    if (!b.steps.empty())
        step.need("booster").unsupported("has categorical splits (enable_categorical), which are not supported inside a "
                                         "scikit-learn document; register the booster itself (format 'xgboost')");
    const std::string type = step.string("type");
    if (b.task != p.task)
        step.need("booster").invalid("has objective " + b.objective + ", a " +
                                     (b.task == spec::Task::Classification ? "classifier" : "regressor") +
                                     " objective, but the step is " + type);
    if (b.model.num_features != num_features)
        step.need("booster").invalid("reads " + std::to_string(b.model.num_features) +
                                     " features, but the vector before it has " + std::to_string(num_features));
    if (classifier && b.classes.size() != p.classes.size())
        step.need("booster").invalid("has " + std::to_string(b.classes.size()) + " output classes, but the document lists " +
                                     std::to_string(p.classes.size()));
    p.model = std::move(b.model);  // XGBoost's `<` on float32 inputs, its base margin and trees
    p.transform = b.transform;
    p.objective = b.objective;
}

}  // namespace

void xgb_classifier(const JsonReader& step, int32_t f, spec::Pipeline& p) { booster_step(step, f, p, true); }
void xgb_regressor(const JsonReader& step, int32_t f, spec::Pipeline& p) { booster_step(step, f, p, false); }

}  // namespace pg_predict::importers::sklearn
