#!/usr/bin/python3
"""The FedAvg coordinator of torch_fedavg.py with its hosts in processes of their own, which it
talks to only through pipes, in serialized states, as a coordinator talks to remote hosts.

Same arguments, phases, marks and JSON summary as torch_fedavg.py (--build final only); what
differs is how states travel:

  claim hosts      --hosts processes are forked, each with a pipe; the global state is
                   serialized (torch.save into io.BytesIO) and its bytes sent to every host
  aggregation      every host makes its update from the state it holds (the same perturbation
                   as torch_fedavg.py), serializes it and sends the bytes back; the coordinator
                   receives each update's bytes (multiprocessing's recv_bytes), deserializes
                   them (torch.load) and averages the updates
  synchronization  the new global state is serialized and its bytes sent to every host
  save             torch.save to a checkpoint file, as in torch_fedavg.py

So the coordinator allocates and frees a model-sized byte string per host per round on top of
the tensors: the pattern in which glibc malloc keeps the most memory (docs/admission.md). The
same seeds give the same states as torch_fedavg.py: a synchronization's crc32 is the same.

    RAMGUARD_SOCKET=/tmp/rg.sock /usr/bin/python3 client/python/examples/torch_fedavg_hosts.py \\
        --build final --model vit_s_16 --rounds 3 --hosts 2
"""

import io
import multiprocessing
import os
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_fedavg  # noqa: E402
from torch_fedavg import Coordinator, aggregate, host_update, torch  # noqa: E402


def serialize(state):
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer


def host_main(conn):
    """A host: holds the state it was last sent; asked for an update, sends one serialized."""
    torch.set_num_threads(1)
    state = None
    while True:
        try:
            kind, seed = conn.recv()
        except EOFError:
            return
        if kind == "state":
            state = torch.load(io.BytesIO(conn.recv_bytes()))
        elif kind == "update":
            buffer = serialize(host_update(state, seed))
            conn.send_bytes(buffer.getbuffer())
            del buffer
        else:
            return


class HostsCoordinator(Coordinator):
    def __init__(self, args, run, checkpoint_dir):
        super().__init__(args, run, checkpoint_dir)
        if self.baseline:
            raise SystemExit("torch_fedavg_hosts: only --build final (the baseline's cycle is "
                             "torch_fedavg.py's)")
        self.hosts = []  # (process, connection)

    def send_state(self):
        """The global state's bytes to every host; returns their length and crc32."""
        buffer = serialize(self.state)
        view = buffer.getbuffer()
        for _, conn in self.hosts:
            conn.send(("state", 0))
            conn.send_bytes(view)
        detail = {"serialized_bytes": view.nbytes, "crc32": f"{zlib.crc32(view):08x}"}
        del view
        buffer.close()
        return detail

    def claim_hosts(self):
        context = multiprocessing.get_context("fork")
        for _ in range(self.args.hosts):
            mine, theirs = context.Pipe()
            process = context.Process(target=host_main, args=(theirs,), daemon=True)
            process.start()
            theirs.close()
            self.hosts.append((process, mine))
        self.send_state()
        torch_fedavg.say(f"claimed {self.args.hosts} hosts (processes; states sent through "
                         "pipes, serialized)")

    def updates(self, round_no):
        seeds = [self.args.seed + 1000 * round_no + h for h in range(self.args.hosts)]
        for (_, conn), seed in zip(self.hosts, seeds):
            conn.send(("update", seed))
        updates = []
        for _, conn in self.hosts:
            payload = conn.recv_bytes()
            updates.append(torch.load(io.BytesIO(payload)))
            del payload
        return updates

    def aggregation(self, round_no):
        updates = self.updates(round_no)
        result = aggregate(self.state, updates, self.weights)
        del updates
        self.state = result
        return {"hosts": len(self.hosts)}

    def synchronization(self):
        return self.send_state()

    def teardown(self):
        for process, conn in self.hosts:
            conn.send(("stop", 0))
            conn.close()
            process.join(timeout=10)
        self.hosts = []
        super().teardown()


if __name__ == "__main__":
    sys.exit(torch_fedavg.main(coordinator_class=HostsCoordinator))
