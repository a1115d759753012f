#!/usr/bin/python3
"""Conformance: text pipelines (CountVectorizer, TfidfVectorizer, HashingVectorizer,
TfidfTransformer; text_cases.py) against scikit-learn, row by row.

Each case is fitted on generated multilingual documents, deployed with the Python client and
scored over other documents (with words never seen at fitting, empty and very long ones, and
NULLs): predict (and predict_proba where the model has it) within max(1e-5, 1e-5 * |expected|) of
scikit-learn's, batched, per row (enable_batching off) and in parallel workers. NULL text gives
NULL. Refusals name what they refuse; bytes that are not UTF-8 (a SQL_ASCII database) are an
ERROR, never a crash. src/text/unicode_tables.inc must be what scripts/gen-unicode-tables.py writes.

Run: /usr/bin/python3 regress/conformance/test_text.py [-k name] [--list]
Needs the extension installed (make install). Last line: 'conformance: N passed, M failed'.
"""

import contextlib
import os
import subprocess
import sys
import tempfile

import numpy as np

from harness import Failure, add_test, assert_close, assert_equal, main, to_floats
from pgcluster import Cluster

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))
import pg_predict  # noqa: E402
import text_cases  # noqa: E402

N_SCORE = 300


class Env:
    def __init__(self, pg):
        self.pg = pg
        self.conn = pg.connect()
        self.conn.execute("CREATE EXTENSION pg_predict")
        self.conn.execute("SET max_parallel_workers_per_gather = 0")
        self.docs, self.titles, self.x = text_cases.corpus(N_SCORE, 48, unseen=True)
        self.conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text, title text, x float8)")
        with self.conn.cursor() as cur:
            cur.executemany("INSERT INTO docs VALUES (%s, %s, %s, %s)",
                            [(i + 1, d, t, float(v)) for i, (d, t, v) in enumerate(zip(self.docs, self.titles, self.x))])
            cur.execute("INSERT INTO docs VALUES (%s, NULL, NULL, 0)", [N_SCORE + 1])
        self.conn.execute("ANALYZE docs")
        self.cases = text_cases.cases()

    def query(self, sql, params=None):
        return self.conn.execute(sql, params).fetchall()


@contextlib.contextmanager
def make_env():
    with Cluster(settings={"max_worker_processes": 8, "max_parallel_workers": 4}) as pg:
        env = Env(pg)
        try:
            yield env
        finally:
            env.conn.close()


def expected(env, case):
    import pandas as pd
    if case.frame is not None:
        X = pd.DataFrame({"body": env.docs, "title": env.titles, "x": env.x})
    else:
        X = env.docs
    pred = np.asarray(case.estimator.predict(X), dtype=np.float64)
    proba = np.asarray(case.estimator.predict_proba(X), dtype=np.float64) if case.compare == "proba" else None
    return pred, proba


def scores(env, name, case, table="docs", settings=()):
    calls = ["predict(%(m)s, t)"] + (["predict_proba(%(m)s, t)"] if case.compare == "proba" else [])
    with env.conn.transaction():
        for s in settings:
            env.conn.execute(s)
        return env.query(f"SELECT id, {', '.join(calls)} FROM {table} t ORDER BY id", {"m": name})


def check(env, case, rows, label, pred, proba, ids_mod=None):
    n = N_SCORE
    got = [r for r in rows if (r[0] - 1) % 1000 < n] if ids_mod else rows[:n]
    tail = [r for r in rows if r not in got]
    idx = [((r[0] - 1) % 1000) for r in got]
    ids = [r[0] for r in got]
    labels = to_floats([r[1] for r in got])
    want = pred[idx]
    if proba is not None:  # a near tie may go either way
        top = np.sort(proba[idx], axis=1)
        tie = (top[:, -1] - top[:, -2]) < 1e-6
        labels = np.where(tie, want, labels)
    assert_close(f"{label}: predict", labels, want, ids=ids)
    if proba is not None:
        assert_close(f"{label}: predict_proba", to_floats([r[2] for r in got], proba.shape[1]), proba[idx], ids=ids)
    # The NULL documents: a missing value in every column the vectorizer gives, which a model
    # with a rule for missing values (HistGradientBoosting) takes, and the others make NULL.
    takes_missing = type(case.estimator.steps[-1][1]).__name__.startswith("HistGradientBoosting")
    for r in tail:
        if r[1] is not None and not takes_missing:
            raise Failure(f"{label}: NULL text gave {r[1]!r}, not NULL")


def case_test(name):
    def run(env):
        case = env.cases[name]
        pg_predict.deploy(env.conn, name, case.estimator,
                          feature_names=["body"] if case.frame is None else None)
        pred, proba = expected(env, case)
        check(env, case, scores(env, name, case), name, pred, proba)
        check(env, case, scores(env, name, case, settings=["SET LOCAL pg_predict.enable_batching = off"]),
              name + " per row", pred, proba)
    return run


for _name in text_cases.cases():
    add_test(f"case[{_name}]", case_test(_name))


def test_parallel_workers(env):
    """A parallel plan: each worker vectorizes its share of the rows with its own copy."""
    env.conn.execute("CREATE TABLE big AS SELECT (i * 1000 + id) AS id, body, title, x FROM docs, "
                     "generate_series(0, 19) i")
    env.conn.execute("ANALYZE big")
    parallel = ["SET LOCAL max_parallel_workers_per_gather = 2", "SET LOCAL parallel_setup_cost = 0",
                "SET LOCAL parallel_tuple_cost = 0", "SET LOCAL min_parallel_table_scan_size = 0"]
    for name in ("tfidf_word12_multi", "hashing_tfidf", "ct_text_and_numbers"):
        case = env.cases[name]
        pg_predict.deploy(env.conn, name + "_par", case.estimator,
                          feature_names=["body"] if case.frame is None else None)
        with env.conn.transaction():
            for s in parallel:
                env.conn.execute(s)
            plan = "\n".join(r[0] for r in env.query(f"EXPLAIN SELECT predict('{name}_par', t) FROM big t"))
        if "Gather" not in plan:
            raise Failure(f"no parallel plan:\n{plan}")
        pred, proba = expected(env, case)
        rows = scores(env, name + "_par", case, "big", parallel)
        check(env, case, rows, name + " in parallel workers", pred, proba, ids_mod=True)


add_test("parallel_workers", test_parallel_workers)


def test_explain(env):
    """EXPLAIN names the vectorizer; explain_model gives its vocabulary's size, not the terms."""
    pg_predict.deploy(env.conn, "explained", env.cases["tfidf_word12_multi"].estimator, feature_names=["body"])
    plan = "\n".join(r[0] for r in env.query("EXPLAIN SELECT predict('explained', t) FROM docs t"))
    if "text: body vocabulary word 1-2-grams" not in plan:
        raise Failure(f"EXPLAIN does not describe the vectorizer:\n{plan}")
    doc = env.query("SELECT explain_model('explained')")[0][0]
    v = doc["after"]["text_vectorizers"][0]
    n = len(env.cases["tfidf_word12_multi"].estimator.steps[0][1].vocabulary_)
    assert_equal("explain_model's vocabulary", v["vectorizer"]["vocabulary"], f"{n} values")


add_test("explain", test_explain)


def test_explain_prediction_terms(env):
    """explain_prediction names a text row's top terms: each the term's tf-idf value times the
    model's coefficient, as scikit-learn's transform and coef_ give it; all of them sum to the
    text's attribution."""
    case = env.cases["tfidf_word"]
    pg_predict.deploy(env.conn, "why", case.estimator, feature_names=["body"])
    vec, lr = case.estimator.steps[0][1], case.estimator.steps[-1][1]
    terms = {i: t for t, i in vec.vocabulary_.items()}
    rows = env.query("SELECT id, body, explain_prediction('why', t, 5), explain_prediction('why', t, NULL) "
                     "FROM docs t WHERE id <= 40 AND body <> '' ORDER BY id")
    for id_, body, top5, everything in rows:
        X = vec.transform([body]).tocoo()
        want = sorted(((terms[j], x, x * lr.coef_[0][j]) for j, x in zip(X.col, X.data)),
                      key=lambda t: -abs(t[2]))
        attr = top5["top_feature_attributions"][0]
        got = attr.get("terms", [])
        assert_equal(f"row {id_}: how many terms", len(got), min(5, len(want)))
        for g, (term, x, a) in zip(got, want):
            if g["term"] != term and abs(abs(g["attribution"]) - abs(a)) > 1e-9:  # a tie may swap
                raise Failure(f"row {id_}: term {g['term']!r}, want {term!r}")
            assert_close(f"row {id_}: {term} attribution", np.array([g["attribution"]]), np.array([a]))
        total = sum(t["attribution"] for t in everything["top_feature_attributions"][0].get("terms", []))
        assert_close(f"row {id_}: the terms sum to the text's attribution", np.array([total]),
                     np.array([everything["top_feature_attributions"][0]["attribution"]]))


add_test("explain_prediction_terms", test_explain_prediction_terms)


def expect_export_error(estimator, needle, **kw):
    try:
        pg_predict.export(estimator, **kw)
    except pg_predict.ExportError as e:
        if needle not in str(e):
            raise Failure(f"refusal {e} lacks {needle!r}")
        return
    raise Failure(f"{estimator} was exported; expected a refusal with {needle!r}")


def test_refusals(env):
    """What the exporter and create_model refuse, each naming it."""
    import numpy as np
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_selection import SelectKBest, f_classif
    from sklearn.preprocessing import Binarizer, MaxAbsScaler, Normalizer
    from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer, TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    docs, y = env.docs[:60], [i % 2 for i in range(60)]
    expect_export_error(make_pipeline(TfidfVectorizer(tokenizer=str.split), LogisticRegression()).fit(docs, y),
                        "callable tokenizer", feature_names=["body"])
    expect_export_error(make_pipeline(TfidfVectorizer(token_pattern=r"[a-z]+"), LogisticRegression()).fit(docs, y),
                        "token_pattern '[a-z]+' is not supported", feature_names=["body"])
    expect_export_error(make_pipeline(TfidfVectorizer(analyzer=str.split), LogisticRegression()).fit(docs, y),
                        "callable analyzer", feature_names=["body"])
    expect_export_error(make_pipeline(TfidfVectorizer(), LogisticRegression()).fit(docs, y),
                        "feature_names=['column']")
    expect_export_error(make_pipeline(CountVectorizer(dtype=np.int8), LogisticRegression()).fit(docs, y),
                        "dtype int8", feature_names=["body"])
    frame = pd.DataFrame({"body": docs, "x": np.arange(60.0)})
    both = ColumnTransformer([("body", TfidfVectorizer(), "body"), ("x", "passthrough", ["x"])])
    for est, needle, data in [
            (make_pipeline(TfidfVectorizer(), MaxAbsScaler(), LogisticRegression()),
             "MaxAbsScaler after a text vectorizer", docs),
            (make_pipeline(CountVectorizer(), Normalizer(), LogisticRegression()),
             "Normalizer after a text vectorizer", docs),
            (make_pipeline(both, SelectKBest(f_classif, k=5), LogisticRegression()),
             "a column selection over a text vectorizer's columns and others together", frame),
            (make_pipeline(TfidfVectorizer(), TruncatedSVD(5, random_state=0), Binarizer(threshold=0.1), TfidfTransformer(),
                           LogisticRegression()), "TfidfTransformer", docs)]:
        doc = pg_predict.export(est.fit(data, y), feature_names=None if data is frame else ["body"])
        try:
            with env.conn.transaction():
                env.conn.execute("SELECT create_model('refused', %s::jsonb)", [__import__("json").dumps(doc)])
        except Exception as e:
            if needle not in str(e):
                raise Failure(f"create_model's error {str(e).splitlines()[0]!r} lacks {needle!r}")
        else:
            raise Failure(f"create_model took {needle.split()[0]}")


add_test("refusals", test_refusals)


def test_invalid_utf8(env):
    """In a SQL_ASCII database a text value may hold any bytes: an ERROR, never a crash."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    import psycopg
    env.conn.execute("CREATE DATABASE ascii_db ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0")
    ascii_docs = ["cat dog", "bird cat sings", "dog barks", "a bird"] * 10  # the client sends ASCII only
    est = make_pipeline(TfidfVectorizer(), LogisticRegression()).fit(ascii_docs, [i % 2 for i in range(40)])
    with env.pg.connect(dbname="ascii_db") as c:
        c.execute("SET client_encoding = 'SQL_ASCII'")
        c.execute("CREATE EXTENSION pg_predict")
        pg_predict.deploy(c, "t", est, feature_names=["body"])
        c.execute("CREATE TABLE raw (id int, body text)")
        c.execute("INSERT INTO raw VALUES (1, convert_from('\\x6361fe74'::bytea, 'SQL_ASCII')), (2, 'cat')")
        for batching in ("on", "off"):
            try:
                with c.transaction():
                    c.execute(f"SET LOCAL pg_predict.enable_batching = {batching}")
                    c.execute("SELECT predict('t', r) FROM raw r").fetchall()
            except psycopg.Error as e:
                if "not valid UTF-8" not in str(e):
                    raise Failure(f"the error does not say why: {e}")
            else:
                raise Failure("invalid UTF-8 was scored")
        assert_equal("the server is up", c.execute("SELECT predict('t', r) FROM raw r WHERE id = 2").fetchall()[0][0]
                     in (0.0, 1.0), True)


add_test("invalid_utf8", test_invalid_utf8)


def test_latin1_database(env):
    """A database in another encoding: its text is converted to UTF-8 first (café in LATIN1 is
    the bytes 63 61 66 e9), so it scores as in a UTF-8 database."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    docs = ["café crème", "naïve élève", "café", "garçon noël"] * 10
    est = make_pipeline(TfidfVectorizer(), LogisticRegression()).fit(docs, [i % 2 for i in range(40)])
    env.conn.execute("CREATE DATABASE latin1_db ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0")
    with env.pg.connect(dbname="latin1_db") as c:
        c.execute("CREATE EXTENSION pg_predict")
        pg_predict.deploy(c, "t", est, feature_names=["body"])
        c.execute("CREATE TABLE raw (id int, body text)")
        test = ["café", "naïve garçon", "CAFÉ élève"]
        for i, t in enumerate(test):
            c.execute("INSERT INTO raw VALUES (%s, %s)", [i, t])
        for batching in ("on", "off"):
            with c.transaction():
                c.execute(f"SET LOCAL pg_predict.enable_batching = {batching}")
                got = [r[0] for r in c.execute("SELECT predict_proba('t', r) FROM raw r ORDER BY id").fetchall()]
            assert_close(f"LATIN1, batching {batching}", np.array(got), est.predict_proba(test))


add_test("latin1_database", test_latin1_database)


def test_unicode_tables_are_current(env):
    """The committed tables are what the generator writes from this Python."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "t.inc")
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen-unicode-tables.py"), out], check=True)
        with open(out) as f, open(os.path.join(ROOT, "src", "text", "unicode_tables.inc")) as g:
            if f.read() != g.read():
                raise Failure("src/text/unicode_tables.inc is not what scripts/gen-unicode-tables.py writes: run it")


add_test("unicode_tables_are_current", test_unicode_tables_are_current)


if __name__ == "__main__":
    main(make_env)
