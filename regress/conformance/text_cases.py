"""Text pipelines for test_text.py (and test_export.py's check that every registered class has a
conformance case): scikit-learn's vectorizers with every supported option, alone and combined,
fitted here on generated multilingual documents.

Documents mix English, French, German, Spanish, Greek, Russian, Turkish, Japanese, Chinese and
Korean words, upper case, accents, digits, hyphens and apostrophes, punctuation, emoji, tabs,
newlines and other white space; some are empty, some very long. The scored documents also hold
words never seen at fitting."""

import random

import numpy as np

WORDS = {
    "en": "the cat sat on a mat dog barks loudly bird sings ticket refund invoice payment broken "
          "login password error crash slow fast great terrible love hate don't it's e-mail user_name".split(),
    "fr": "café crème brûlée naïve façade où déjà élève garçon noël cœur ça été".split(),
    "de": "straße größe über schön müde mädchen ÄRGER Öl fußball".split(),
    "es": "niño año mañana corazón acción pingüino ¿qué? ¡hola!".split(),
    "el": "ΟΔΥΣΣΕΥΣ οδυσσεύς καλημέρα ΣΑΣ σας λόγος ΑΣΣ".split(),
    "ru": "привет МИР ёлка съешь щука Объявление".split(),
    "tr": "İstanbul ISTANBUL ılık iğne Işık".split(),
    "ja": "東京 日本語 テキスト ひらがな カタカナ".split(),
    "zh": "北京 上海 你好 世界 數據".split(),
    "ko": "한국어 텍스트 안녕하세요 처리".split(),
    "misc": "3.14 1,000 x2 ﬁnance ﬂow ＦＵＬＬ ①② 😀 👍🏽 #tag @user (parens) [brackets] a-b-c O'Neil".split(),
}
SEPARATORS = [" ", " ", " ", "  ", "\t", "\n", " \r\n ", "\u00a0", "\u3000", ", ", ". ", "! ", " - "]
POSITIVE = {"refund", "broken", "crash", "error", "terrible", "hate", "ÄRGER", "щука", "데이터", "北京", "😀", "niño"}


def document(rng, unseen=False):
    r = rng.random()
    if r < 0.03:
        return ""
    n = rng.randint(300, 600) if r < 0.06 else rng.randint(1, 18)
    words = []
    for _ in range(n):
        lang = rng.choice(list(WORDS))
        w = rng.choice(WORDS[lang])
        if unseen and rng.random() < 0.15:
            w = "unseen" + "".join(rng.choice("abcxyzé") for _ in range(rng.randint(1, 6)))
        if rng.random() < 0.1:
            w = w.upper()
        words.append(w)
    out = ""
    for w in words:
        out += w + rng.choice(SEPARATORS)
    return out.strip() if rng.random() < 0.5 else out


def corpus(n, seed, unseen=False):
    rng = random.Random(seed)
    docs = [document(rng, unseen) for _ in range(n)]
    titles = [document(rng, unseen)[:40] for _ in range(n)]
    x = np.array([rng.gauss(0, 1) for _ in range(n)])
    return docs, titles, x


def labels(docs, x, classes=2):
    score = np.array([sum(1 for w in POSITIVE if w.lower() in d.lower()) for d in docs], dtype=float)
    score += 0.3 * x + np.array([len(d) % 3 for d in docs]) * 0.2
    if classes == 0:
        return score
    cut = np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1])
    return np.digitize(score, cut)


class TextCase:
    """A fitted pipeline, what it reads ('body' alone, or a frame with body, title, x) and how
    it is compared: 'proba' (predict and predict_proba) or 'predict'."""

    def __init__(self, name, estimator, frame, compare):
        self.name, self.estimator, self.frame, self.compare = name, estimator, frame, compare


def cases():
    from sklearn.compose import ColumnTransformer
    from sklearn.decomposition import TruncatedSVD
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier, RandomForestRegressor
    from sklearn.tree import DecisionTreeClassifier
    from sklearn.feature_extraction.text import (CountVectorizer, HashingVectorizer, TfidfTransformer,
                                                 TfidfVectorizer)
    from sklearn.linear_model import LogisticRegression, Ridge, RidgeClassifier, SGDClassifier
    from sklearn.feature_selection import SelectKBest, SelectPercentile, VarianceThreshold, chi2
    from sklearn.naive_bayes import BernoulliNB, ComplementNB, MultinomialNB
    from sklearn.pipeline import make_pipeline, make_union
    from sklearn.preprocessing import Binarizer, StandardScaler
    from sklearn.svm import LinearSVC
    import pandas as pd

    docs, titles, x = corpus(400, 47)
    y2, y3, yr = labels(docs, x, 2), labels(docs, x, 3), labels(docs, x, 0)
    lr = lambda: LogisticRegression(max_iter=2000)  # noqa: E731
    specs = [
        ("tfidf_word", lambda: make_pipeline(TfidfVectorizer(), lr()), y2, "proba"),
        ("tfidf_word12_multi", lambda: make_pipeline(TfidfVectorizer(ngram_range=(1, 2)), lr()), y3, "proba"),
        ("tfidf_word23", lambda: make_pipeline(TfidfVectorizer(ngram_range=(2, 3)), lr()), y2, "proba"),
        ("count_mnb", lambda: make_pipeline(CountVectorizer(), MultinomialNB()), y3, "proba"),
        ("count_complement_nb", lambda: make_pipeline(CountVectorizer(ngram_range=(1, 2)), ComplementNB()), y3, "proba"),
        ("tfidf_complement_nb_norm", lambda: make_pipeline(TfidfVectorizer(), ComplementNB(norm=True)), y2, "proba"),
        ("count_binary_lr", lambda: make_pipeline(CountVectorizer(binary=True), lr()), y2, "proba"),
        ("tfidf_char13", lambda: make_pipeline(TfidfVectorizer(analyzer="char", ngram_range=(1, 3)), lr()), y2, "proba"),
        ("tfidf_char_wb24", lambda: make_pipeline(TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4)), lr()),
         y3, "proba"),
        ("tfidf_ascii_sgd", lambda: make_pipeline(TfidfVectorizer(strip_accents="ascii"),
                                                  SGDClassifier(loss="log_loss", random_state=0)), y2, "proba"),
        ("tfidf_unicode_ridge", lambda: make_pipeline(TfidfVectorizer(strip_accents="unicode"), RidgeClassifier()),
         y3, "predict"),
        ("tfidf_nolower_l1", lambda: make_pipeline(TfidfVectorizer(lowercase=False, norm="l1"), lr()), y2, "proba"),
        ("tfidf_sublinear_noidf", lambda: make_pipeline(TfidfVectorizer(sublinear_tf=True, use_idf=False), lr()),
         y2, "proba"),
        ("tfidf_nosmooth_nonorm", lambda: make_pipeline(TfidfVectorizer(smooth_idf=False, norm=None), lr()),
         y2, "proba"),
        ("count_stop_english", lambda: make_pipeline(CountVectorizer(stop_words="english"), lr()), y2, "proba"),
        ("tfidf_stop_list", lambda: make_pipeline(TfidfVectorizer(stop_words=["the", "cat", "σας", "北京"],
                                                                  ngram_range=(1, 2)), lr()), y2, "proba"),
        ("tfidf_nonspace", lambda: make_pipeline(TfidfVectorizer(token_pattern=r"\S+"), lr()), y2, "proba"),
        ("tfidf_word1", lambda: make_pipeline(TfidfVectorizer(token_pattern=r"(?u)\b\w+\b"), lr()), y2, "proba"),
        ("tfidf_pruned_vocabulary", lambda: make_pipeline(TfidfVectorizer(max_features=60, min_df=2, max_df=0.8),
                                                          lr()), y3, "proba"),
        ("hashing_lr", lambda: make_pipeline(HashingVectorizer(n_features=2 ** 12), lr()), y2, "proba"),
        ("hashing_tfidf", lambda: make_pipeline(HashingVectorizer(n_features=2 ** 10, alternate_sign=False, norm=None),
                                                TfidfTransformer(sublinear_tf=True), lr()), y3, "proba"),
        ("tfidf_then_transformer", lambda: make_pipeline(TfidfVectorizer(), TfidfTransformer(sublinear_tf=True), lr()),
         y2, "proba"),  # two idf weightings, each its own
        ("count_tfidf_svc", lambda: make_pipeline(CountVectorizer(ngram_range=(1, 2)), TfidfTransformer(), LinearSVC()),
         y2, "predict"),
        ("union_word_char", lambda: make_pipeline(make_union(TfidfVectorizer(),
                                                             TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 3))),
                                                  lr()), y2, "proba"),
        ("l1_pushdown", lambda: make_pipeline(TfidfVectorizer(ngram_range=(1, 2)),
                                              LogisticRegression(penalty="l1", solver="liblinear", C=3)), y2, "proba"),
        ("tfidf_ridge_regression", lambda: make_pipeline(TfidfVectorizer(), Ridge()), yr, "predict"),
        ("tfidf_forest", lambda: make_pipeline(TfidfVectorizer(), RandomForestClassifier(n_estimators=20, max_depth=8,
                                                                                         random_state=0)), y2, "proba"),
        ("count_tree", lambda: make_pipeline(CountVectorizer(ngram_range=(1, 2)),
                                             DecisionTreeClassifier(max_depth=8, random_state=0)), y3, "proba"),
        ("charwb_boosting", lambda: make_pipeline(TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 3)),
                                                  GradientBoostingClassifier(n_estimators=20, max_depth=3, random_state=0)),
         y2, "proba"),
        ("lsa_lr", lambda: make_pipeline(TfidfVectorizer(ngram_range=(1, 2)), TruncatedSVD(20, random_state=0), lr()),
         y3, "proba"),
        ("lsa_forest", lambda: make_pipeline(TfidfVectorizer(), TruncatedSVD(12, random_state=0),
                                             RandomForestClassifier(n_estimators=20, max_depth=6, random_state=0)),
         y2, "proba"),
        # BernoulliNB: its binarize thresholds the vectorizer's row (absent terms stay 0).
        ("tfidf_bernoulli_nb", lambda: make_pipeline(TfidfVectorizer(), BernoulliNB()), y3, "proba"),
        ("count_bernoulli_binarize1", lambda: make_pipeline(CountVectorizer(ngram_range=(1, 2)), BernoulliNB(binarize=1.0)),
         y2, "proba"),
        ("hashing_bernoulli_raw", lambda: make_pipeline(HashingVectorizer(n_features=2 ** 10, alternate_sign=False),
                                                        BernoulliNB(binarize=None)),
         y2, "proba"),
        ("tfidf_binarizer_lr", lambda: make_pipeline(TfidfVectorizer(), Binarizer(threshold=0.2), TfidfTransformer(),
                                                     lr()), y2, "proba"),
        # A selection after the vectorizer: the dropped terms still count in the row's norm.
        ("select_kbest_lr", lambda: make_pipeline(TfidfVectorizer(ngram_range=(1, 2)), SelectKBest(chi2, k=40), lr()),
         y3, "proba"),
        ("select_percentile_forest", lambda: make_pipeline(CountVectorizer(), SelectPercentile(chi2, percentile=30),
                                                           RandomForestClassifier(n_estimators=15, max_depth=6,
                                                                                  random_state=0)), y2, "proba"),
        ("variance_select_lsa", lambda: make_pipeline(TfidfVectorizer(), VarianceThreshold(1e-4),
                                                      TruncatedSVD(8, random_state=0), lr()), y2, "proba"),
        # dtype=float32: every value rounded to float32 as scikit-learn computes it.
        ("tfidf_float32_sublinear", lambda: make_pipeline(TfidfVectorizer(dtype=np.float32, sublinear_tf=True), lr()),
         y2, "proba"),
        ("tfidf_float32_l1_tree", lambda: make_pipeline(TfidfVectorizer(dtype=np.float32, norm="l1"),
                                                        DecisionTreeClassifier(max_depth=10, random_state=0)),
         y3, "proba"),
        ("hashing_float32_bernoulli", lambda: make_pipeline(HashingVectorizer(n_features=2 ** 11, dtype=np.float32),
                                                            BernoulliNB(binarize=0.1)), y2, "proba"),
        ("count_float32_tfidf_mnb", lambda: make_pipeline(CountVectorizer(dtype=np.float32), TfidfTransformer(),
                                                          MultinomialNB()), y3, "proba"),
    ]
    out = {}
    for name, make, y, compare in specs:
        out[name] = TextCase(name, make().fit(docs, y), None, compare)
    frame = pd.DataFrame({"body": docs, "title": titles, "x": x})
    ct = ColumnTransformer([("body", TfidfVectorizer(ngram_range=(1, 2)), "body"),
                            ("title", TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 3)), "title"),
                            ("x", StandardScaler(), ["x"])])
    out["ct_text_and_numbers"] = TextCase("ct_text_and_numbers", make_pipeline(ct, lr()).fit(frame, y3), frame, "proba")
    ct2 = ColumnTransformer([("a", TfidfVectorizer(), "body"), ("b", CountVectorizer(analyzer="char", ngram_range=(2, 2)),
                                                               "body")])
    out["ct_one_column_twice"] = TextCase("ct_one_column_twice", make_pipeline(ct2, lr()).fit(frame, y2), frame, "proba")
    ct4 = ColumnTransformer([("body", TfidfVectorizer(ngram_range=(1, 2)), "body"), ("x", "passthrough", ["x"])])
    out["ct_text_forest_regression"] = TextCase("ct_text_forest_regression", make_pipeline(ct4, RandomForestRegressor(
        n_estimators=15, max_depth=8, random_state=0)).fit(frame, yr), frame, "predict")
    ct5 = ColumnTransformer([("body", make_pipeline(TfidfVectorizer(), SelectKBest(chi2, k=30)), "body"),
                             ("title", TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 3)), "title"),
                             ("x", "passthrough", ["x"])])
    out["ct_bernoulli_select_numbers"] = TextCase("ct_bernoulli_select_numbers", make_pipeline(ct5, BernoulliNB(
        binarize=0.05)).fit(frame, y3), frame, "proba")
    from sklearn.ensemble import HistGradientBoostingClassifier
    ct3 = ColumnTransformer([("lsa", make_pipeline(TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 3)),
                                                   TruncatedSVD(10, random_state=0)), "body"),
                             ("x", "passthrough", ["x"])])
    out["ct_lsa_boosting"] = TextCase("ct_lsa_boosting", make_pipeline(ct3, HistGradientBoostingClassifier(
        max_iter=30, random_state=0)).fit(frame, y3), frame, "proba")
    return out
