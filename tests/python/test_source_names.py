# SPDX-License-Identifier: Apache-2.0
"""Builder.describe(f) and Builder.exclude(...): naming a source's items in failure records and
leaving the ones a list or a quarantine file names out, as C++'s source_builder does."""
import pytest

import ferry


def fail_on_b(x):
    if "b" in str(x):
        raise ValueError(f"cannot read {x}")
    return x


# Items named in a list are pulled and counted as filtered at the source, never reaching a
# stage; the accounting still adds up.
def test_exclude_leaves_named_items_out():
    seen = []
    b = (ferry.source(["a.jpg", "b.jpg", "c.jpg", "d.jpg"]).exclude(["b.jpg", "d.jpg"])
         .exclude(["c.jpg"]).map(lambda x: seen.append(x) or x))
    with b.build(threads=1) as pipe:
        assert list(pipe) == ["a.jpg"]
        stats = pipe.stats()
    assert seen == ["a.jpg"]
    assert (stats.produced, stats.delivered, stats.filtered) == (4, 1, 3)


# A run's quarantine file leaves its failed inputs out of the next run: no failure the second
# time, the item counted as filtered.
def test_a_quarantine_file_excludes_last_runs_failures(tmp_path):
    bad = tmp_path / "bad.jsonl"
    files = ["a.jpg", "b.jpg", "c.jpg", "bb.jpg"]
    b = ferry.source(files).map(fail_on_b, on_error="skip")
    with b.build(threads=1, quarantine=bad) as pipe:
        assert list(pipe) == ["a.jpg", "c.jpg"]
    again = ferry.source(files).exclude(quarantine=bad).map(fail_on_b, on_error="skip")
    with again.build(threads=1) as pipe:
        assert list(pipe) == ["a.jpg", "c.jpg"]
        assert pipe.failures() == [] and pipe.stats().filtered == 2


# describe(f) names items of any kind in failures; a URL's credentials are REDACTED before
# ferry keeps the name; exclusion matches the described (redacted) name.
def test_describe_names_items_and_redacts():
    jobs = [{"url": "https://h/a"}, {"url": "https://h/b?X-Amz-Signature=SECRET"},
            {"url": "https://h/c"}]
    b = (ferry.source(jobs).describe(lambda j: j["url"])
         .map(lambda j: fail_on_b(j["url"]) and j, on_error="skip"))
    with b.build(threads=1, max_epoch_failure_rate=1.0) as pipe:
        assert [j["url"] for j in pipe] == ["https://h/a", "https://h/c"]
        failures = pipe.failures()
    assert [f.input for f in failures] == ["https://h/b?X-Amz-Signature=REDACTED"]
    assert "SECRET" not in failures[0].message
    skipped = ferry.source(jobs).describe(lambda j: j["url"]).exclude(["https://h/a"])
    with skipped.build(threads=1) as pipe:
        assert [j["url"] for j in pipe] == ["https://h/b?X-Amz-Signature=SECRET", "https://h/c"]


# Wrong use: after a stage, a single str, a describe that returns no
# str, a file that is not a quarantine file.
def test_wrong_use_is_a_python_error(tmp_path):
    b = ferry.source(["a"])
    with pytest.raises(ValueError, match=r"exclude\(...\): only right after the source"):
        b.map(lambda x: x).exclude(["a"])
    with pytest.raises(ValueError, match=r"describe\(f\): only right after the source"):
        b.map(lambda x: x).describe(str)
    with pytest.raises(TypeError, match="not one str"):
        b.exclude("a")
    with ferry.source([1.5]).describe(lambda x: x).map(lambda x: x).build(threads=1) as pipe:
        with pytest.raises(ferry.StageError, match="f must return a str or an os.PathLike, got "
                                                   "a Python float"):
            list(pipe)
    junk = tmp_path / "junk.jsonl"
    junk.write_text("not json\n")
    with pytest.raises(ValueError, match="junk.jsonl"):
        b.exclude(quarantine=junk)
    with pytest.raises(OSError):
        b.exclude(quarantine=tmp_path / "missing.jsonl")
