"""Text vectorizers: CountVectorizer, TfidfVectorizer, HashingVectorizer, TfidfTransformer.
Each `export_<name>(est, sources, ctx)` returns (step, sources of its output) as the featurizers
do (featurizers.py); the C++ side of the family is src/importers/sklearn/text.cpp.

A vectorizer reads one text column: the pipeline's own input (Pipeline(TfidfVectorizer(), ...),
deployed with feature_names=['body']) or a ColumnTransformer's column named as a scalar
('body', as scikit-learn requires for a 1-D text input)."""

import re

import numpy as np

# The token patterns whose re.findall is "the maximal runs of a class, at least n long", written
# in every way scikit-learn users write them: class -> its spellings with n.
_WORD, _NONSPACE = r"\w", r"\S"
_PATTERNS = {}
for _cls, _spellings in ((_WORD, [r"\w"]), (_NONSPACE, [r"\S", r"[^\s]"])):
    for _c in _spellings:
        for _b in ("", r"\b"):
            if _cls == _NONSPACE and _b:
                continue  # \b is a word boundary: \b\S+\b is no run of \S
            _PATTERNS[_b + _c + "+" + _b] = (_cls, 1)
            _PATTERNS[_b + _c + _c + "+" + _b] = (_cls, 2)


def token_class(est, ctx):
    """(class, minimum length) of the vectorizer's token_pattern, or a refusal naming it."""
    pattern = est.token_pattern
    body = pattern[4:] if pattern.startswith("(?u)") else pattern
    if body in _PATTERNS:
        cls, n = _PATTERNS[body]
    else:
        m = re.fullmatch(r"(\\b)?(\\w|\\S)\{(\d+),\}(\\b)?", body)
        if not m or (m.group(2) == r"\S" and (m.group(1) or m.group(4))) or bool(m.group(1)) != bool(m.group(4)):
            ctx.refuse(est, "token_pattern",
                       f"token_pattern {pattern!r} is not supported: pg_predict tokenizes exactly the "
                       r"maximal runs of \w (or \S) of at least n characters, written \b\w\w+\b (the "
                       r"default), \w+, \b\w+\b, \w{n,}, \S+ or [^\s]+ (with or without (?u))")
        cls, n = m.group(2), int(m.group(3))
        if n < 1:
            ctx.refuse(est, "token_pattern", f"token_pattern {pattern!r} matches empty tokens")
    return ("word" if cls == _WORD else "nonspace"), n


def _analyzer(est, ctx):
    for name in ("preprocessor", "tokenizer"):
        if getattr(est, name, None) is not None:
            ctx.refuse(est, name, f"a callable {name} is Python code, which pg_predict cannot run")
    if callable(est.analyzer):
        ctx.refuse(est, "analyzer", "a callable analyzer is Python code, which pg_predict cannot run")
    if callable(est.strip_accents):
        ctx.refuse(est, "strip_accents", "a callable strip_accents is Python code, which pg_predict cannot run")
    if est.input != "content":
        ctx.refuse(est, "input", f"input={est.input!r}: pg_predict reads the text itself (input='content')")
    if est.analyzer not in ("word", "char", "char_wb"):
        ctx.refuse(est, "analyzer", f"analyzer {est.analyzer!r}")
    step = {"analyzer": est.analyzer, "ngram_range": [int(est.ngram_range[0]), int(est.ngram_range[1])],
            "lowercase": bool(est.lowercase), "strip_accents": est.strip_accents or None}
    if est.analyzer == "word":
        cls, n = token_class(est, ctx)
        step["token_pattern"] = {"pattern": est.token_pattern, "class": cls, "min_length": n}
        stop = est.get_stop_words()
        step["stop_words"] = sorted(stop) if stop else []
    return step


def _one_text_column(est, sources, ctx):
    if len(sources) != 1 or sources[0] is None:
        ctx.refuse(est, None, f"it reads {len(sources)} columns; a text vectorizer reads one text input "
                   "column (a ColumnTransformer names it as a scalar, 'body', not ['body'])")
    ctx.read_text(est, sources[0], 0)


def _dtype(est, ctx):
    """The vectorizer's output dtype as pg_predict computes it: "float32" (every value rounded to
    float32 after each transform, as scikit-learn's float32 arithmetic) or "float64". Integer
    counts of at least 32 bits are exact in float64; narrower types could wrap."""
    dtype = np.dtype(est.dtype)
    if dtype == np.float32:
        return "float32"
    if dtype == np.float64 or (type(est).__name__ == "CountVectorizer" and dtype in (np.int32, np.int64)):
        return "float64"
    ctx.refuse(est, "dtype", f"dtype {dtype.name}: pg_predict supports float64 (the default), float32"
               + (", int64 and int32" if type(est).__name__ == "CountVectorizer" else ""))


def _vocabulary(est):
    terms = [None] * len(est.vocabulary_)
    for term, i in est.vocabulary_.items():
        terms[int(i)] = term
    return terms


def _tfidf(tfidf):
    step = {"norm": tfidf.norm, "use_idf": bool(tfidf.use_idf), "sublinear_tf": bool(tfidf.sublinear_tf)}
    if tfidf.use_idf:
        step["idf"] = [float(x) for x in tfidf.idf_]
    return step


def export_count_vectorizer(est, sources, ctx):
    _one_text_column(est, sources, ctx)
    step = {"type": "CountVectorizer", **_analyzer(est, ctx), "binary": bool(est.binary),
            "dtype": _dtype(est, ctx), "vocabulary": _vocabulary(est)}
    return step, [None] * len(step["vocabulary"])


def export_tfidf_vectorizer(est, sources, ctx):
    _one_text_column(est, sources, ctx)
    step = {"type": "TfidfVectorizer", **_analyzer(est, ctx), "binary": bool(est.binary), "dtype": _dtype(est, ctx),
            "vocabulary": _vocabulary(est), **_tfidf(est._tfidf)}
    return step, [None] * len(step["vocabulary"])


def export_hashing_vectorizer(est, sources, ctx):
    _one_text_column(est, sources, ctx)
    step = {"type": "HashingVectorizer", **_analyzer(est, ctx), "binary": bool(est.binary), "dtype": _dtype(est, ctx),
            "n_features": int(est.n_features), "alternate_sign": bool(est.alternate_sign), "norm": est.norm}
    return step, [None] * int(est.n_features)


def export_tfidf_transformer(est, sources, ctx):
    if hasattr(est, "n_features_in_") and est.n_features_in_ != len(sources):
        ctx.refuse(est, None, f"it was fitted on {est.n_features_in_} columns, its input has {len(sources)}")
    return {"type": "TfidfTransformer", **_tfidf(est)}, [None] * len(sources)


FEATURIZERS = {
    "CountVectorizer": export_count_vectorizer,
    "TfidfVectorizer": export_tfidf_vectorizer,
    "HashingVectorizer": export_hashing_vectorizer,
    "TfidfTransformer": export_tfidf_transformer,
}

# The classes whose first step reads one text column, for export()'s input names.
VECTORIZERS = ("CountVectorizer", "TfidfVectorizer", "HashingVectorizer")

