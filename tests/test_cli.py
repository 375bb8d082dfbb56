"""facebias CLI: `facebias metrics` agrees with facebias.metrics; bad input is one line, exit 2."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from facebias import metrics as M
from facebias.cli import main

FACEBIAS = Path(sys.executable).with_name("facebias")  # the installed console script


# --------------------------------------------------------------------------- a known world
def make_pairs(seed: int = 0, n_id: int = 30, n_gen: int = 200, n_imp: int = 5000) -> pd.DataFrame:
    """Two groups A, B crossed with sex F, M; B's impostor scores are shifted up by 1. 2 x 5000
    impostors per group resolve FMR 1e-3 (metrics.enough_impostors: 10 / FMR = 10,000)."""
    rng = np.random.default_rng(seed)
    parts = []
    for grp, shift in (("A", 0.0), ("B", 1.0)):
        for sex in ("F", "M"):
            ids = [f"{grp}{sex}{i}" for i in range(n_id)]
            g1 = rng.choice(ids, n_gen)
            i1, i2 = rng.choice(ids, n_imp), rng.choice(ids, n_imp)
            i2 = np.where(i1 == i2, np.roll(i2, 1), i2)
            parts.append(pd.DataFrame({
                "id1": np.concatenate([g1, i1]),
                "id2": np.concatenate([g1, i2]),
                "score": np.concatenate([rng.normal(3.0, 1.0, n_gen), rng.normal(shift, 1.0, n_imp)]),
                "genuine": np.repeat([1, 0], [n_gen, n_imp]),
                "grp": grp,
                "sex": sex,
            }))
    return pd.concat(parts, ignore_index=True).sample(frac=1, random_state=seed).reset_index(drop=True)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    df = make_pairs()
    path = tmp_path_factory.mktemp("world") / "pairs.csv"
    df.to_csv(path, index=False)
    return df, path


BASE = ["--score-col", "score", "--label-col", "genuine"]


def run(capsys, *argv):
    code = main(["metrics", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- agreement
def test_text_output_is_the_library_report(world, capsys):
    df, path = world
    code, out, err = run(capsys, path, *BASE, "--group-col", "grp", "--n-boot", 20, "--seed", 3)
    assert code == 0 and err == ""
    expected = M.group_report(df, "score", "genuine", "grp", 1e-3, n_boot=20, seed=3)
    assert "thresholds" not in expected.meta  # the library's report is unchanged; the CLI labels it
    expected.meta["thresholds"] = M.IN_SAMPLE
    assert out == str(expected) + "\n"
    assert out.splitlines()[1] == f"thresholds: {M.IN_SAMPLE}" and "in-sample" in M.IN_SAMPLE


def test_json_matches_an_independent_computation(world, capsys):
    df, path = world
    fmrs = [1e-2, 1e-3]
    code, out, err = run(capsys, path, *BASE, "--group-col", "grp", "--fmr", *fmrs,
                         "--n-boot", 30, "--seed", 7, "--json")
    assert code == 0 and err == ""
    rep = json.loads(out)
    assert rep["meta"]["group"] == "grp" and rep["meta"]["fmr"] == fmrs
    assert rep["meta"]["thresholds"].startswith("in-sample") and "folds" not in rep
    assert rep["meta"]["n_boot"] == 30 and rep["meta"]["pairs"] == str(path)
    groups = pd.DataFrame(rep["groups"])
    assert len(groups) == 4 and set(groups["group"]) == {"A", "B"}

    # point estimates from the elementary functions, not from group_report
    imp_all = df.loc[df.genuine == 0, "score"].to_numpy()
    for f in fmrs:
        t = M.threshold_at_fmr(imp_all, f)
        for g in ("A", "B"):
            row = groups[(groups.fmr_target == f) & (groups.group == g)].iloc[0]
            gen = df.loc[(df.grp == g) & (df.genuine == 1), "score"].to_numpy()
            imp = df.loc[(df.grp == g) & (df.genuine == 0), "score"].to_numpy()
            assert row.n_genuine == gen.size and row.n_impostor == imp.size
            assert row.threshold_global == pytest.approx(t, rel=1e-12)
            assert row.fmr_global == pytest.approx(M.fmr_at(imp, t), rel=1e-12)
            assert row.fnmr_global == pytest.approx(M.fnmr_at(gen, t), rel=1e-12)
            assert row.threshold_group == pytest.approx(M.threshold_at_fmr(imp, f), rel=1e-12)
            assert row.fnmr_group == pytest.approx(M.fnmr_at_fmr(gen, imp, f), rel=1e-12)
            assert row.fmr_global_lo <= row.fmr_global <= row.fmr_global_hi
        a, b = (groups[(groups.fmr_target == f) & (groups.group == g)].iloc[0] for g in "AB")
        assert b.fmr_global > a.fmr_global  # B's impostors are shifted up

    # and, intervals included, exactly what the library gives on the same data
    direct = M.group_report(df, "score", "genuine", "grp", fmrs, n_boot=30, seed=7).to_dict()
    assert rep["groups"] == direct["groups"]
    assert rep["summary"] == direct["summary"]


def test_identity_bootstrap_and_defaults(world, capsys):
    df, path = world
    code, out, _ = run(capsys, path, *BASE, "--group-col", "grp", "--id-cols", "id1", "id2",
                       "--n-boot", 10, "--json")
    assert code == 0
    rep = json.loads(out)
    assert rep["meta"]["bootstrap_unit"] == "identities" and rep["meta"]["fmr"] == [1e-3]
    direct = M.group_report(df, "score", "genuine", "grp", ids=("id1", "id2"), n_boot=10)
    assert rep["groups"] == direct.to_dict()["groups"]


def test_no_intervals_with_n_boot_0(world, capsys):
    _, path = world
    code, out, _ = run(capsys, path, *BASE, "--group-col", "grp", "--n-boot", 0, "--json")
    assert code == 0
    rep = json.loads(out)
    assert rep["meta"]["n_boot"] == 0
    assert not any(k.endswith(("_lo", "_hi")) for k in rep["groups"][0])


@pytest.mark.parametrize("form", ["one flag", "repeated flag"])
def test_intersectional_groups_are_the_product(world, capsys, form):
    df, path = world
    groups = ["--group-col", "grp", "sex"] if form == "one flag" else ["--group-col", "grp", "--group-col", "sex"]
    code, out, _ = run(capsys, path, *BASE, *groups, "--fmr", 1e-2, 1e-3, "--n-boot", 5, "--json")
    assert code == 0
    rep = json.loads(out)
    assert rep["meta"]["group"] == "grp/sex"
    table = pd.DataFrame(rep["groups"])
    assert len(table) == 2 * 4
    assert set(table["group"]) == {"A/F", "A/M", "B/F", "B/M"}
    direct = M.group_report(df.assign(**{"grp/sex": df.grp + "/" + df.sex}), "score", "genuine",
                            "grp/sex", [1e-2, 1e-3], n_boot=5)
    assert rep["groups"] == direct.to_dict()["groups"]


def test_no_group_col_is_one_group_all(world, capsys):
    df, path = world
    code, out, err = run(capsys, path, *BASE, "--n-boot", 0, "--json")
    assert code == 0, err
    rep = json.loads(out)
    assert [g["group"] for g in rep["groups"]] == ["all"]
    # one group: the overall rates; fairness summaries across groups are undefined
    imp = df.loc[df.genuine == 0, "score"]
    assert rep["groups"][0]["fmr_global"] == pytest.approx(M.fmr_at(imp, M.threshold_at_fmr(imp, 1e-3)))
    assert all(s["fdr"] is None for s in rep["summary"])


def test_other_formats(world, tmp_path, capsys):
    df, _ = world
    expected = json.dumps(M.group_report(df, "score", "genuine", "grp", n_boot=0).to_dict()["groups"])
    for name, save in (("p.parquet", df.to_parquet), ("p.pkl", df.to_pickle),
                       ("p.csv.gz", lambda p: df.to_csv(p, index=False))):
        save(tmp_path / name)
        code, out, err = run(capsys, tmp_path / name, *BASE, "--group-col", "grp", "--n-boot", 0, "--json")
        assert code == 0, err
        assert json.dumps(json.loads(out)["groups"]) == expected


# --------------------------------------------------------------------------- bad input
SMALL = "score,genuine,grp\n0.9,1,A\n0.1,0,A\n0.8,1,B\n0.3,0,B\n0.7,1,A\n0.2,0,B\n"


def error_of(capsys, path, *argv):
    code, out, err = run(capsys, path, *argv)
    assert code == 2 and out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err  # exactly one line
    assert "Traceback" not in err
    prefix = f"facebias: error: {path}: "
    assert err.startswith(prefix), err
    return err[len(prefix):]


def write(tmp_path, text, name="pairs.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def replace_line(text, line, new):
    lines = text.splitlines(keepends=True)
    lines[line - 1] = new + "\n"
    return "".join(lines)


@pytest.mark.parametrize(("line", "cell", "column", "what"), [
    (2, "nan,1,A", "score", "non-finite"),
    (5, "inf,0,B", "score", "non-finite"),
    (4, ",1,B", "score", "non-finite"),
    (6, "abc,1,A", "score", "not a number"),
    (3, "0.1,2,A", "genuine", "0/1"),
    (7, "0.2,,B", "genuine", "missing label"),
    (5, "0.3,0,", "grp", "missing group"),
])
def test_bad_value_names_file_column_and_line(tmp_path, capsys, line, cell, column, what):
    path = write(tmp_path, replace_line(SMALL, line, cell))
    msg = error_of(capsys, path, *BASE, "--group-col", "grp", "--n-boot", 0)
    assert f"'{column}'" in msg and f"line {line}" in msg and what in msg, msg


def test_line_numbers_count_blank_lines_and_multiline_fields(tmp_path, capsys):
    text = ('note,score,genuine,grp\n'
            '"a note\nover two lines",0.9,1,A\n'   # lines 2-3
            '\n'                                    # line 4, blank
            'x,0.1,0,A\n'                           # line 5
            'x,0.8,1,B\n'                           # line 6
            '\n\n'                                  # lines 7-8
            'x,0.3,7,B\n'                           # line 9: bad label
            'x,0.2,0,B\n')
    path = write(tmp_path, text)
    assert pd.read_csv(path).shape == (5, 4)
    msg = error_of(capsys, path, *BASE, "--group-col", "grp", "--n-boot", 0)
    assert "'genuine'" in msg and "line 9" in msg, msg


def test_line_numbers_with_crlf_line_endings(tmp_path, capsys):
    path = tmp_path / "pairs.csv"
    path.write_bytes(replace_line(SMALL, 6, "0.7,3,A").replace("\n", "\r\n").encode())
    msg = error_of(capsys, path, *BASE, "--group-col", "grp", "--n-boot", 0)
    assert "line 6" in msg, msg


@pytest.mark.parametrize(("text", "line"), [
    ("score,genuine,grp\n0.9,1,A,extra\n0.1,0,A\n", 2),  # pandas would shift columns
    ("score,genuine,grp\n0.9,1,A,extra\n0.1,0,A,extra\n", 2),
    ('grp,genuine,score\n"A\nB",1,0.9\n\nA,0,0.1,7\n', 5),
])
def test_row_with_more_fields_than_the_header(tmp_path, capsys, text, line):
    msg = error_of(capsys, write(tmp_path, text), *BASE, "--group-col", "grp")
    assert f"line {line} has 4 fields" in msg, msg


def test_rows_of_other_formats_are_numbered_from_1(world, tmp_path, capsys):
    df, _ = world
    bad = df.copy()
    bad.loc[41, "genuine"] = 5
    path = tmp_path / "pairs.parquet"
    bad.to_parquet(path)
    msg = error_of(capsys, path, *BASE, "--group-col", "grp")
    assert "'genuine'" in msg and "row 42" in msg, msg


def test_tab_separated(tmp_path, capsys):
    path = write(tmp_path, SMALL.replace(",", "\t"), "pairs.tsv")
    code, out, _ = run(capsys, path, *BASE, "--group-col", "grp", "--fmr", 0.4, "--n-boot", 0, "--json")
    assert code == 0
    assert json.loads(out)["meta"]["n_genuine"] == 3
    path = write(tmp_path, replace_line(SMALL, 3, "0.1,-1,A").replace(",", "\t"), "bad.tsv")
    assert "line 3" in error_of(capsys, path, *BASE, "--group-col", "grp")


def test_missing_identity_value(tmp_path, capsys):
    path = write(tmp_path, "score,genuine,grp,id1,id2\n0.9,1,A,a,a\n0.1,0,A,a,\n0.8,1,B,b,b\n0.3,0,B,b,a\n")
    msg = error_of(capsys, path, *BASE, "--group-col", "grp", "--id-cols", "id1", "id2")
    assert "'id2'" in msg and "line 3" in msg


@pytest.mark.parametrize("option", ["--score-col", "--label-col", "--group-col", "--id-cols"])
def test_missing_column(tmp_path, capsys, option):
    path = write(tmp_path, SMALL)
    argv = {"--score-col": ["--score-col", "nope", "--label-col", "genuine"],
            "--label-col": ["--score-col", "score", "--label-col", "nope"],
            "--group-col": [*BASE, "--group-col", "grp", "nope"],
            "--id-cols": [*BASE, "--group-col", "grp", "--id-cols", "grp", "nope"]}[option]
    msg = error_of(capsys, path, *argv)
    assert "column 'nope' not found" in msg and "score" in msg


def test_duplicated_column_is_rejected_by_name(tmp_path, capsys):
    """A header that repeats a used column (pandas would silently read the first as 'score'
    and rename the second 'score.1') is refused, naming the column; a repeated column the
    command does not use is harmless."""
    path = write(tmp_path, "score,genuine,grp,score\n0.9,1,A,0.1\n0.1,0,A,0.9\n0.8,1,B,0.2\n0.3,0,B,0.7\n")
    msg = error_of(capsys, path, *BASE, "--group-col", "grp")
    assert "column 'score' appears 2 times" in msg
    ok = write(tmp_path, "score,genuine,grp,note,note\n0.9,1,A,x,y\n0.1,0,A,x,y\n0.8,1,B,x,y\n0.3,0,B,x,y\n",
               name="ok.csv")
    assert main(["metrics", str(ok), *BASE, "--group-col", "grp", "--n-boot", "0"]) == 0
    capsys.readouterr()
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_arrays([pa.array([0.9, 0.1]), pa.array([1, 0]), pa.array([0.2, 0.8])],
                                 names=["score", "genuine", "score"])
    pq.write_table(table, tmp_path / "dup.parquet")
    assert "column 'score' appears 2 times" in error_of(capsys, tmp_path / "dup.parquet", *BASE)


def test_empty_group(tmp_path, capsys):
    path = write(tmp_path, SMALL + "0.5,0,C\n")
    msg = error_of(capsys, path, *BASE, "--group-col", "grp")
    assert "'grp'" in msg and "'C'" in msg and "no genuine" in msg


@pytest.mark.parametrize(("argv", "what"), [
    (["--fmr", "0"], "--fmr"), (["--fmr", "1e-3", "1.5"], "--fmr"), (["--fmr", "nan"], "--fmr"),
    (["--n-boot", "-1"], "--n-boot"), (["--ci", "1"], "--ci"), (["--alpha", "2"], "--alpha"),
])
def test_bad_options(tmp_path, capsys, argv, what):
    path = write(tmp_path, SMALL)
    assert what in error_of(capsys, path, *BASE, "--group-col", "grp", *argv)


@pytest.mark.parametrize(("content", "what"), [
    (None, "no such file"),
    ("", "empty file"),
    ("score,genuine,grp\n", "no data rows"),
    ("score,genuine,grp\n0.1,1,A\n0.2,0,A,extra,fields\n", "line 3"),  # pandas' tokenizer message
    (b"score,genuine,grp\n0.1,1,\xff\xfe\n", "cannot read"),
    ("dir", "directory"),
])
def test_unreadable_input(tmp_path, capsys, content, what):
    path = tmp_path / "pairs.csv"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content == "dir":
        path.mkdir()
    elif content is not None:
        path.write_text(content)
    assert what in error_of(capsys, path, *BASE, "--group-col", "grp")


def test_bad_pickle(tmp_path, capsys):
    path = tmp_path / "pairs.pkl"
    pd.to_pickle([1, 2, 3], path)
    assert "DataFrame" in error_of(capsys, path, *BASE)


def test_usage_errors_exit_2(capsys):
    assert main([]) == 2
    assert main(["metrics", "x.csv"]) == 2  # --score-col and --label-col are required
    assert main(["metrics", "x.csv", *BASE, "--fmr", "abc"]) == 2
    assert "usage: facebias" in capsys.readouterr().err
    assert main(["--help"]) == 0
    assert "metrics" in capsys.readouterr().out


# --------------------------------------------------------------------------- the console script
def test_console_script(world, tmp_path):
    df, path = world
    assert FACEBIAS.exists()
    ok = subprocess.run([FACEBIAS, "metrics", path, *BASE, "--group-col", "grp", "--n-boot", "0",
                         "--json"], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    rep = json.loads(ok.stdout)
    direct = M.group_report(df, "score", "genuine", "grp", n_boot=0).to_dict()
    assert rep["groups"] == direct["groups"]

    bad = write(tmp_path, replace_line(SMALL, 4, "0.8,1.5,B"))
    err = subprocess.run([FACEBIAS, "metrics", bad, *BASE, "--group-col", "grp"],
                         capture_output=True, text=True, timeout=120)
    assert err.returncode == 2 and err.stdout == ""
    assert err.stderr.count("\n") == 1 and "Traceback" not in err.stderr
    assert err.stderr.startswith(f"facebias: error: {bad}: ") and "line 4" in err.stderr


# --------------------------------------------------------------------------- annotate
def annotate(capsys, params, tmp_path):
    code = main(["annotate", "--params", str(params), "--synthetic", str(tmp_path / "syn"),
                 "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"facebias: error: {params}: ")
    return err


def test_annotate_reports_bad_params_and_missing_faces_in_one_line(tmp_path, capsys):
    params = write(tmp_path, "annotate:\n  panel: {n_annotators: 3, wrong_field: 1}\n", "params.yaml")
    assert "wrong_field" in annotate(capsys, params, tmp_path)
    params.write_text("annotate:\n  panel: {n_annotators: 3}\n")
    assert "images.parquet" in annotate(capsys, params, tmp_path)
    assert not (tmp_path / "out" / "annotations.sqlite").exists()


# --------------------------------------------------------------------------- hostile input (issue 19)
def one_line_error(capsys, argv, source):
    """Run ``facebias ARGV``; assert exit 2, one stderr line naming ``source``, no traceback."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"facebias: error: {source}: "), err
    return err


def test_utf16_csv_with_a_byte_order_mark_reads_like_utf8(tmp_path, capsys):
    utf8 = write(tmp_path, SMALL)
    utf16 = tmp_path / "pairs16.csv"
    utf16.write_bytes(SMALL.encode("utf-16"))  # with a BOM, as Excel's "Unicode text" saves
    assert utf16.read_bytes()[:2] in (b"\xff\xfe", b"\xfe\xff")
    reports = [run(capsys, p, *BASE, "--group-col", "grp", "--n-boot", 0, "--json") for p in (utf8, utf16)]
    assert reports[0][0] == reports[1][0] == 0, reports
    assert json.loads(reports[0][1])["groups"] == json.loads(reports[1][1])["groups"]
    # line numbers in errors count the decoded file's lines
    bad = tmp_path / "bad16.csv"
    bad.write_bytes(replace_line(SMALL, 5, "abc,0,B").encode("utf-16"))
    msg = error_of(capsys, bad, *BASE, "--group-col", "grp", "--n-boot", 0)
    assert "'score'" in msg and "line 5" in msg, msg


@pytest.mark.parametrize(("content", "what"), [
    (b"score,genuine,grp\n0.1,1,A\n0.2,0,caf\xe9\n", "line 3"),  # latin-1, not UTF-8
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00", "binary"),
    ("score,genuine\n0.1,1\n".encode("utf-16-le"), "binary"),  # UTF-16 without a BOM
])
def test_binary_or_non_utf8_csv_is_one_clear_line(tmp_path, capsys, content, what):
    path = tmp_path / "pairs.csv"
    path.write_bytes(content)
    err = one_line_error(capsys, ["metrics", path, *BASE], path)
    assert "UTF-8" in err and what in err and "UnicodeDecodeError" not in err, err


@pytest.mark.parametrize("command", ["world", "synth", "annotate"])
@pytest.mark.parametrize(("content", "what"), [
    ("world: [1, 2\ngenerate: {\nannotate: x: y\n", "invalid YAML"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe\xfa", "UTF-8"),
    (None, "not found"),
    ("dir", "folder"),
    ("- 1\n- 2\n", "mapping"),
])
def test_bad_params_file_is_one_line(tmp_path, capsys, command, content, what):
    params = tmp_path / "params.yaml"
    if isinstance(content, bytes):
        params.write_bytes(content)
    elif content == "dir":
        params.mkdir()
    elif content is not None:
        params.write_text(content)
    err = one_line_error(capsys, [command, "--params", params, "--out", tmp_path / "out"], params)
    assert what in err, err
    assert not (tmp_path / "out").exists()


def test_params_in_utf16_with_a_byte_order_mark_are_read(tmp_path):
    from facebias.io import load_params

    text = "world:\n  seed: 5  # é\n"
    (tmp_path / "p.yaml").write_bytes(text.encode("utf-16"))
    assert load_params(tmp_path / "p.yaml", "world") == {"seed": 5}


WORLD_PARAMS = "bfw_world:\n  identities_per_group: 5\n  images_per_identity: 2\n  n_folds: 5\n"


@pytest.mark.parametrize("out", ["afile/w.parquet", "adir"])
def test_world_with_an_unwritable_out_is_one_line(tmp_path, capsys, out):
    params = write(tmp_path, WORLD_PARAMS, "params.yaml")
    (tmp_path / "afile").write_text("a file, not a folder")
    (tmp_path / "adir").mkdir()
    target = tmp_path / out
    err = one_line_error(capsys, ["world", "--params", params, "--out", target, "--quiet"], target)
    assert "folder" in err or "directory" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "afile", "params.yaml"]
    assert list((tmp_path / "adir").iterdir()) == []


def test_world_writes_with_good_params(tmp_path, capsys):
    params = write(tmp_path, WORLD_PARAMS, "params.yaml")
    assert main(["world", "--params", str(params), "--out", str(tmp_path / "w.parquet"), "--quiet"]) == 0
    assert len(pd.read_parquet(tmp_path / "w.parquet")) > 0


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_report_needs_an_existing_reports_folder(tmp_path, capsys, kind):
    reports = tmp_path / "reports"
    if kind == "file":
        reports.write_text("not a folder")
    err = one_line_error(capsys, ["report", "--reports", reports], reports)
    assert "folder" in err, err
    assert (reports.is_file() if kind == "file" else not reports.exists())


@pytest.mark.parametrize("command", ["synth", "annotate"])
def test_out_that_is_a_file_is_named(tmp_path, capsys, command):
    params = write(tmp_path, "generate: {}\nannotate: {}\n", "params.yaml")
    out = write(tmp_path, "a file", "out")
    err = one_line_error(capsys, [command, "--params", params, "--out", out], out)
    assert "folder" in err, err


# --------------------------------------------------------------------------- small ones (issue 19)
@pytest.mark.parametrize("fmr", [["0"], ["1e-3", "1.5"], ["nan"], ["inf"], ["1e-400"], ["1"]])
def test_fmr_errors_print_plain_numbers(tmp_path, capsys, fmr):
    path = write(tmp_path, SMALL)
    msg = error_of(capsys, path, *BASE, "--fmr", *fmr)
    assert "--fmr" in msg and "np." not in msg and "float64" not in msg, msg


def test_negative_seed_names_the_option(tmp_path, capsys):
    path = write(tmp_path, SMALL)
    msg = error_of(capsys, path, *BASE, "--group-col", "grp", "--seed", "-5")
    assert "--seed" in msg and "-5" in msg, msg


def test_error_lines_print_numpy_scalars_as_plain_numbers():
    from facebias.cli import InputError

    msg = InputError("x.csv", "--fmr: got np.float64(0.0), np.int64(-3), np.True_ and\nnp.str_('a')").message
    assert msg == "--fmr: got 0.0, -3, True and 'a'"


def test_n_boot_out_of_range_is_refused_before_any_work(tmp_path, capsys):
    """`--n-boot 99999999999999999999` ran until killed (issue 19): now one line, at once."""
    path = write(tmp_path, SMALL)
    for bad in ("-1", "100001", "99999999999999999999"):
        msg = error_of(capsys, path, *BASE, "--group-col", "grp", "--n-boot", bad)
        assert "--n-boot" in msg and "100,000" in msg and bad in msg, msg


# --------------------------------------------------------------------------- score direction
def test_distances_are_refused_without_distance_and_give_the_similarity_report_with_it(world, tmp_path, capsys):
    """A distance table (1 - similarity, genuine pairs lower) is refused in one line naming
    --distance; with --distance every rate equals the similarity table's (a monotone
    decreasing transform keeps the order of the pairs) and the thresholds come back as
    distances (1 - the similarity thresholds)."""
    df, path = world
    dist = df.assign(score=1 - df["score"])
    dpath = tmp_path / "distances.csv"
    dist.to_csv(dpath, index=False)
    err = one_line_error(capsys, ["metrics", dpath, *BASE, "--group-col", "grp", "--n-boot", 0], dpath)
    assert "pass --distance" in err
    err = one_line_error(capsys, ["metrics", path, *BASE, "--distance", "--n-boot", 0], path)
    assert "leave --distance out" in err
    code, out, _ = run(capsys, dpath, *BASE, "--group-col", "grp", "--n-boot", 10, "--seed", 2, "--json", "--distance")
    assert code == 0
    got = pd.DataFrame(json.loads(out)["groups"])
    code, out, _ = run(capsys, path, *BASE, "--group-col", "grp", "--n-boot", 10, "--seed", 2, "--json")
    ref = pd.DataFrame(json.loads(out)["groups"])
    rates = [c for c in ref.columns if c.startswith(("fmr", "fnmr")) and "mcse" not in c]
    pd.testing.assert_frame_equal(got[rates], ref[rates])
    np.testing.assert_allclose(got["threshold_global"], 1 - ref["threshold_global"], atol=1e-12)
    np.testing.assert_allclose(got["threshold_group"], 1 - ref["threshold_group"], atol=1e-12)
    np.testing.assert_allclose(got["threshold_group_lo"], 1 - ref["threshold_group_hi"], atol=1e-12)
    assert (got["threshold_group_lo"] <= got["threshold_group_hi"]).all()
    # --n-boot 0: no bounds to swap, the thresholds still come back as distances
    code, out, _ = run(capsys, dpath, *BASE, "--group-col", "grp", "--n-boot", 0, "--json", "--distance")
    got0 = pd.DataFrame(json.loads(out)["groups"])
    assert code == 0 and "threshold_group_lo" not in got0
    np.testing.assert_allclose(got0["threshold_group"], 1 - ref["threshold_group"], atol=1e-12)


def test_a_table_of_one_kind_of_pair_passes_the_direction_check():
    from facebias.cli.metrics import check_direction

    s = pd.Series([0.1, 0.9, 0.5])
    assert check_direction(s, pd.Series([1, 1, 1]), distance=False) is None
    assert check_direction(s, pd.Series([0, 0, 0]), distance=True) is None
