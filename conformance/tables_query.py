"""Run devprof's named queries on exported tables with another engine.

    tables_query.py ENGINE ROOT QUERIES_DIR [TABLE ...]

ENGINE is ``spark`` (PySpark in local mode, reading ROOT's hive partitions
as any Spark job would: one DataFrame per table, a temporary view of the
same name) or ``duckdb`` (Python DuckDB; ROOT may be an ``s3://bucket/key``
URL, read through s3fs with the AWS_* environment, since DuckDB's httpfs
extension cannot be installed without the network). Each ``*.sql`` file of
QUERIES_DIR (cmd/devprof-query/queries) runs unchanged, as devprof-query
runs it on the embedded DuckDB; the rows are printed as one JSON object
``{query name: [row objects in column order]}``. TABLE names the tables to
make views of (default: every table with files under ROOT).

Used by cmd/devprof-query's tests, which compare the rows with
devprof-query's own; not a tool for users (they use the engines directly,
docs/tables.md "Querying").
"""

import decimal
import json
import math
import os
import sys

TABLES = ["spans", "instants", "counters", "kernels", "memory", "flows", "steps", "hosts"]


def plain(v):
    """A value as JSON holds it: Decimal as float, non-finite as str."""
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return v


def queries(qdir):
    out = {}
    for f in sorted(os.listdir(qdir)):
        if f.endswith(".sql"):
            with open(os.path.join(qdir, f), encoding="utf-8") as fh:
                out[f[: -len(".sql")]] = fh.read().strip().rstrip(";")
    return out


def run_spark(root, qs, tables):
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("devprof-tables-check")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        # Partition values stay strings, as the columns inside the files are
        # (docs/tables.md): a host named 10 is not a number.
        .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        for t in tables:
            spark.read.parquet(os.path.join(root, t)).createOrReplaceTempView(t)
        out = {}
        for name, sql in qs.items():
            df = spark.sql(sql)
            cols = df.columns
            out[name] = [{c: plain(r[i]) for i, c in enumerate(cols)} for r in df.collect()]
        return out
    finally:
        spark.stop()


def run_duckdb(root, qs, tables):
    import duckdb

    con = duckdb.connect()
    if root.startswith("s3://"):
        import s3fs

        # s3fs reads the AWS_* environment (keys, region, endpoint) as the
        # AWS SDKs do; DuckDB then reads s3:// paths through it.
        con.register_filesystem(s3fs.S3FileSystem(endpoint_url=os.environ.get("AWS_ENDPOINT_URL")))
    for t in tables:
        glob = root.rstrip("/") + "/" + t + "/**/*.parquet"
        con.execute(
            "create view %s as select * from read_parquet('%s', hive_partitioning = true, hive_types_autocast = false)"
            % (t, glob.replace("'", "''"))
        )
    out = {}
    for name, sql in qs.items():
        rel = con.sql(sql)
        cols = rel.columns
        out[name] = [{c: plain(v) for c, v in zip(cols, r)} for r in rel.fetchall()]
    return out


def main(argv):
    if len(argv) < 4 or argv[1] not in ("spark", "duckdb"):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    engine, root, qdir = argv[1], argv[2], argv[3]
    tables = argv[4:]
    if not tables:
        if root.startswith("s3://"):
            print("tables_query.py: name the tables of an s3:// ROOT", file=sys.stderr)
            return 2
        tables = [t for t in TABLES if os.path.isdir(os.path.join(root, t))]
    qs = queries(qdir)
    run = run_spark if engine == "spark" else run_duckdb
    json.dump(run(root, qs, tables), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
