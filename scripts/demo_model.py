"""The demo model: XGBoost trained on the demo table (scripts/demo.sql) and registered as 'churn'.
    /usr/bin/python3 scripts/demo_model.py HOST PORT USER DB MODEL_FILE
make run (scripts/run-demo.sh) and regress/conformance/test_docs_sql.py run it."""
import sys, time
import numpy as np, psycopg, xgboost as xgb

host, port, user, db, model_file = sys.argv[1:6]
with psycopg.connect(host=host, port=port, user=user, dbname=db, autocommit=True) as conn:
    rows = conn.execute("SELECT tenure, monthly_charges, plan_id, churned FROM customers "
                        "ORDER BY id").fetchall()
    # None (a NULL charge) -> NaN: a missing value for xgboost, as NULL is for predict()
    X = np.array([r[:3] for r in rows], dtype=np.float32)
    y = np.array([int(r[3]) for r in rows])
    names = ["tenure", "monthly_charges", "plan_id"]
    # xgboost's own API: its scikit-learn wrapper would need scikit-learn, which make run skips
    booster = xgb.train({"objective": "binary:logistic", "max_depth": 4, "eta": 0.2, "seed": 0},
                        xgb.DMatrix(X, label=y, feature_names=names), num_boost_round=50)
    model_json = booster.save_raw("json").decode()
    with open(model_file, "w") as f:  # kept for trying it from psql
        f.write(model_json)
    conn.execute("SELECT drop_model('churn') FROM models WHERE name = 'churn'")
    t0 = time.time()
    conn.execute("SELECT create_model('churn', %s::jsonb)", [model_json])
    print(f"create_model('churn', ...) took {1000 * (time.time() - t0):.0f} ms; "
          f"xgboost P(churn) of customer 1: {booster.predict(xgb.DMatrix(X[:1], feature_names=names))[0]:.6f}")
