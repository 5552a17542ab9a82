"""Dask runs never hang and never dump the client's tracebacks: a bad address is exit 2,
a cluster without workers or a lost scheduler ends the run with one line."""

from __future__ import annotations

import pytest

from mcengine import distributed
from mcengine.errors import ExecutionError, InputError
from mcengine.runner import RunSpec
from mcengine.scenario import load_scenario

pytestmark = pytest.mark.slow  # starts Dask clusters


@pytest.mark.parametrize("address", ["notaurl", "tcp://", "http://host:8786", "host"])
def test_a_malformed_address_is_an_input_error(address):
    with pytest.raises(InputError, match="--scheduler"):
        distributed.connect(address)


def test_a_port_where_nothing_listens_is_an_input_error(monkeypatch):
    monkeypatch.setattr(distributed, "CONNECT_TIMEOUT_S", 1)
    with pytest.raises(InputError, match="no Dask scheduler answers"):
        distributed.connect("tcp://127.0.0.1:9")


def _spec():
    return RunSpec((load_scenario("h100", ["cluster.instances=4", "cluster.spare_gpus=8"]),), 1, 2048)


def test_a_scheduler_without_workers_is_an_error_not_a_hang(monkeypatch):
    from dask.distributed import LocalCluster

    monkeypatch.setattr(distributed, "WORKER_WAIT_S", 1.0)
    with LocalCluster(n_workers=0, host="127.0.0.1", dashboard_address=None) as cluster:
        with pytest.raises(ExecutionError, match="no Dask worker joined"):
            list(distributed.map_chunks(cluster.scheduler_address, _spec(), [(0, 1024), (1024, 1024)]))


def test_losing_every_worker_mid_run_is_an_error_not_a_hang(monkeypatch):
    from dask.distributed import LocalCluster

    monkeypatch.setattr(distributed, "WORKER_WAIT_S", 1.0)
    monkeypatch.setattr(distributed, "POLL_S", 0.2)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None) as cluster:
        chunks = distributed.map_chunks(cluster.scheduler_address, _spec(), [(s, 1024) for s in range(0, 64 * 1024, 1024)])
        next(chunks)
        cluster.scale(0)
        with pytest.raises(ExecutionError):
            for _ in chunks:
                pass
