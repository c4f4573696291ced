# SPDX-License-Identifier: Apache-2.0
"""The stage and pipeline options of C++'s stage_options and pipeline_options that Python
spells as keywords: failure_window (the window max_failure_rate is judged over) and nvtx."""
import pytest

import ferry


def fails_5_to_7(x):
    if 5 <= x <= 7:
        raise ValueError(f"bad {x}")
    return x


# max_failure_rate is judged over the last failure_window items: over 4 items, the third failure
# in a row (items 4-7: 3 of 4 failed, above 0.5) fails the pipeline naming the rate; over the
# default 100 items, the window is never full and the epoch ends with the other 17.
def test_failure_window_sets_the_rate_budgets_window():
    b = ferry.source(range(20))
    short = b.map(fails_5_to_7, on_error="skip", max_failure_rate=0.5, failure_window=4,
                  name="check")
    with short.build(threads=1) as pipe:
        with pytest.raises(ferry.StageError, match="check") as e:
            list(pipe)
    assert "rate" in str(e.value) or "fraction" in str(e.value), str(e.value)
    default = b.map(fails_5_to_7, on_error="skip", max_failure_rate=0.5, name="check")
    with default.build(threads=1) as pipe:
        assert list(pipe) == [x for x in range(20) if not 5 <= x <= 7]
    with pytest.raises(ValueError, match="failure_window must be at least 1"):
        b.map(fails_5_to_7, failure_window=0)


# nvtx is accepted (off or on) and changes nothing a pipeline delivers; ranges exist only where
# ferry was built with CUDA.
@pytest.mark.parametrize("nvtx", [True, False])
def test_nvtx_option(nvtx):
    with ferry.source(range(10)).map(lambda x: x + 1).build(threads=1, nvtx=nvtx) as pipe:
        assert list(pipe) == list(range(1, 11))
