"""Quantization-aware training probe for the int8 path (issue 64): can PT2E QAT bring a shipped
net's int8 (torchao, X86InductorQuantizer) to the gates, top-1 >= 98% and value MAE <= 0.02
against the net's own bf16, on held-out real positions, at the int8 speed?

    .venv/bin/python benchmarks/int8/qat.py small --make-games 1500     # games once, then QAT
    .venv/bin/python benchmarks/int8/qat.py small --steps 3000 --lr 3e-5
    .venv/bin/python benchmarks/int8/qat.py medium --steps 600

Positions: Stockfish's games from ``frugalzero sfgames`` (400 nodes, 8 random plies, as the
shipped nets were trained on; ``--make-games N`` writes them into ``--games``), split by game:
every 10th game (0 mod 10) is held out, 5 mod 10 calibrates post-training quantization, 7 mod 10
validates during training, the rest train. The first ``--skip-plies`` plies (the random ones)
are left out, and no position of a held-out, calibration or validation set is trained on. A
second held-out set is runtimes.py's own (2,000 positions of the PGNs under benchmarks/results),
so the figures compare with its table.

Teacher: the shipped net run exactly as the evaluator runs it (runtimes.bf16_reference: bf16,
compiled), its logits over each position's legal moves and its value, computed once. Student:
the net exported (train mode, so the conv-BN pairs match the QAT fusion patterns), prepared with
``prepare_qat_pt2e`` and X86InductorQuantizer(is_qat=True), then moved to eval mode for good:
BN uses its running statistics, which stay frozen, and the fused conv-BN simulates exactly the
folded int8 convolution. Loss: KL(teacher's legal-move policy || student's) + ``value_weight`` x
squared value error, Adam, cosine learning rate, batch ``--batch``. Observers first see
``--warmup-batches`` batches without gradients; they keep updating (moving averages) for the
first ``--observe-frac`` of the steps and are frozen after.

Then, in one process with one timing run: the original net in bf16 (the reference), its
post-training quantization (runtimes.pt2e, fresh calibration), the QAT model converted
(convert_pt2e, torch.compile with frozen weights, fp32 or bf16 autocast in between), the tuned
float weights saved as a normal net file (save_net, safetensors, in the work folder) and
reloaded, those in bf16, and their post-training quantization (the simpler thing to ship: tuned
weights plus a calibration set). Quality is against the ORIGINAL net's bf16 outputs. One JSON
line a variant goes to benchmarks/int8/qat.jsonl.
"""

from __future__ import annotations

import argparse
import copy
import glob
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import chess.pgn
import numpy as np
import runtimes as rt  # benchmarks/int8/runtimes.py: positions, the bf16 reference, PTQ, timing
import torch

from frugalzero.bench.timing import matmul_gflops
from frugalzero.chess.encoding import encode, frames_array
from frugalzero.chess.history import GameHistory
from frugalzero.nn.checkpoint import NetMeta, load_net, save_net
from frugalzero.nn.model import value_from_output
from frugalzero.nn.shipped import resolve_net_path
from frugalzero.runtime.timing import rate

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BATCH = rt.BATCH  # inference and timing batch (128)


# -- positions -------------------------------------------------------------------------------
def make_games(folder: Path, games: int, seed: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    command = [
        str(ROOT / ".venv/bin/frugalzero"), "sfgames", "--games", str(games), "--out",
        str(folder), "--nodes", "400", "--random-plies", "8", "--seed", str(seed), "--json",
    ]  # fmt: skip
    print(" ".join(command), flush=True)
    subprocess.run(command, check=True)


def split_of(game_no: int) -> str:
    return {0: "held", 5: "calib", 7: "val"}.get(game_no % 10, "train")


def sf_positions(folder: Path, skip_plies: int) -> tuple[dict[str, list], int]:
    """NetInputs of every position of the games under ``folder`` (plies from ``skip_plies``
    on, positions with a legal move), split by game (``split_of``)."""
    files = sorted(glob.glob(str(folder / "**/*.pgn"), recursive=True))
    splits: dict[str, list] = {"held": [], "calib": [], "val": [], "train": []}
    game_no = 0
    for path in files:
        with open(path) as f:
            while (game := chess.pgn.read_game(f)) is not None:
                target = splits[split_of(game_no)]
                game_no += 1
                history = GameHistory(game.board())
                for ply, move in enumerate(game.mainline_moves()):
                    if ply >= skip_plies and any(history.board.legal_moves):
                        target.append(history.net_input())
                    history.push(move)
    return splits, game_no


def dedupe(inputs: list, exclude: set) -> list:
    out = []
    for i in inputs:
        if i.key not in exclude:
            exclude.add(i.key)
            out.append(i)
    return out


class Positions:
    """Positions as arrays: frames, meta, legal-move indices (padded) and their count."""

    def __init__(self, inputs: list) -> None:
        n = len(inputs)
        self.n = n
        self.frames = frames_array([i.frames for i in inputs], n).copy()
        self.meta = np.array([i.meta for i in inputs], dtype=np.int64)
        width = max(len(i.indices) for i in inputs)
        self.index = np.zeros((n, width), dtype=np.int64)
        self.legal = np.zeros((n, width), dtype=bool)
        for k, i in enumerate(inputs):
            self.index[k, : len(i.indices)] = i.indices
            self.legal[k, : len(i.indices)] = True

    def planes(self, rows: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(encode(self.frames[rows], self.meta[rows]), dtype=np.float32)


def legal_logits(policy: torch.Tensor, index: np.ndarray, legal: np.ndarray) -> torch.Tensor:
    """(N, L) logits of the legal moves, -inf where a row has fewer."""
    gathered = policy.float().gather(1, torch.from_numpy(index))
    return gathered.masked_fill(~torch.from_numpy(legal), float("-inf"))


def teacher_outputs(call, pos: Positions, head: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The reference's legal-move log-probabilities (N, L) and values (N,), batch 128."""
    logps, values = [], []
    for start in range(0, pos.n, BATCH):
        rows = np.arange(start, min(start + BATCH, pos.n))
        padded = np.concatenate([rows, np.repeat(rows[-1:], BATCH - len(rows))])
        policy, value = call(pos.planes(padded))
        policy, value = policy[: len(rows)], value[: len(rows)]
        logits = legal_logits(torch.as_tensor(policy), pos.index[rows], pos.legal[rows])
        logps.append(torch.log_softmax(logits, dim=1))
        values.append(value_from_output(torch.as_tensor(value), head))
    return torch.cat(logps), torch.cat(values)


# -- QAT -------------------------------------------------------------------------------------
def prepare_qat(net, batch: int):
    from torchao.quantization.pt2e import move_exported_model_to_eval
    from torchao.quantization.pt2e.quantize_pt2e import prepare_qat_pt2e
    from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
        X86InductorQuantizer,
        get_default_x86_inductor_quantization_config,
    )

    model = copy.deepcopy(net).float().train()  # train-mode BN: the QAT conv-BN patterns
    example = torch.randn(batch, net.config.input_planes, 8, 8)
    dims = ({0: torch.export.Dim("batch", min=1, max=4096)},)
    exported = torch.export.export(model, (example,), dynamic_shapes=dims).module()
    quantizer = X86InductorQuantizer()
    quantizer.set_global(get_default_x86_inductor_quantization_config(is_qat=True))
    prepared = prepare_qat_pt2e(exported, quantizer)
    return move_exported_model_to_eval(prepared)  # frozen BN statistics from here on


def set_observers(model, on: bool) -> None:
    """Observers on or off; turned off, the weight ranges get their floor (``weight_grid``)."""
    from torchao.quantization.pt2e import disable_observer, enable_observer

    model.apply(enable_observer if on else disable_observer)
    if not on:
        floor_weight_ranges(model)


def weight_fake_quants(model) -> list:
    return [
        m
        for m in model.modules()
        if hasattr(m, "activation_post_process") and getattr(m, "is_per_channel", False)
    ]


# The weights' grid. The fused fake-quantize op (torch.fused_moving_avg_obs_fake_quant) makes a
# per-channel symmetric weight scale max|w| / 128 from the observer's range on every call, even
# with the observer off, while convert_pt2e takes the observer's calculate_qparams: max|w| /
# 127.5, floored at eps = 2^-12. Trained on the first grid and converted on the second, every
# weight is rounded afresh and what QAT learned about rounding is lost (measured on small: the
# converted model agreed with its own fake-quant model on 96% of top-1 moves, value MAE 0.016,
# as far as post-training quantization is from bf16). So: once the observers are off, each
# range is floored at 128 eps (both formulas then agree on tiny channels), and the model to
# convert gets the ranges that make calculate_qparams give the scales the op trained with.
def floor_weight_ranges(model) -> None:
    with torch.no_grad():
        for m in weight_fake_quants(model):
            obs = m.activation_post_process
            floor = 128 * float(obs.eps)
            obs.max_val.clamp_(min=floor)
            obs.min_val.clamp_(max=-floor)


def aligned_for_convert(prepared, example: torch.Tensor):
    """A copy of the trained QAT model whose conversion uses the weight scales it trained with."""
    model = copy.deepcopy(prepared)
    with torch.no_grad():
        model(example)  # the op writes the scales it uses into each module's buffers
        for m in weight_fake_quants(model):
            obs = m.activation_post_process
            half = (obs.quant_max - obs.quant_min) / 2
            obs.max_val.copy_(m.scale * half)
            obs.min_val.copy_(-m.scale * half)
            scale, _ = m.calculate_qparams()
            if not torch.allclose(scale, m.scale, rtol=1e-5, atol=0):
                raise RuntimeError("weight scales still differ from the trained ones")
    return model


def distill_loss(policy, value, t_logp, t_value, legal, index, head, value_weight, temperature):
    """KL(teacher || student) over the legal moves, both softmaxes at ``temperature`` (below 1
    sharpens them: near-tied top moves weigh more) and scaled by its square, plus the value's
    weighted squared error."""
    s_logits = policy.gather(1, index).masked_fill(~legal, float("-inf"))
    s_logp = torch.log_softmax(s_logits / temperature, dim=1)
    t_logp = torch.log_softmax(t_logp / temperature, dim=1)
    t_p = t_logp.exp()
    kl = torch.where(legal, t_p * (t_logp - s_logp), 0.0).sum(1).mean() * temperature**2
    mse = ((value_from_output(value, head) - t_value) ** 2).mean()
    return kl + value_weight * mse, kl, mse


def evaluate(model, pos: Positions, t_logp, t_value, head, batch: int) -> dict:
    """Fake-quantized (or float) model against the teacher: top-1, value MAE, KL, MSE."""
    agree, abs_err, kl_sum, mse_sum = 0, 0.0, 0.0, 0.0
    with torch.no_grad():
        for start in range(0, pos.n, batch):
            rows = np.arange(start, min(start + batch, pos.n))
            policy, value = model(torch.from_numpy(pos.planes(rows)))
            legal, index = torch.from_numpy(pos.legal[rows]), torch.from_numpy(pos.index[rows])
            s_logits = policy.float().gather(1, index).masked_fill(~legal, float("-inf"))
            tl, tv = t_logp[rows], t_value[rows]
            agree += int((s_logits.argmax(1) == tl.argmax(1)).sum())
            v = value_from_output(value, head)
            abs_err += float((v - tv).abs().sum())
            mse_sum += float(((v - tv) ** 2).sum())
            s_logp = torch.log_softmax(s_logits, 1)
            kl_sum += float(torch.where(legal, tl.exp() * (tl - s_logp), 0.0).sum())
    n = pos.n
    return {
        "top1": round(agree / n, 4),
        "mae": round(abs_err / n, 4),
        "kl": round(kl_sum / n, 5),
        "mse": round(mse_sum / n, 6),
    }


def train_qat(prepared, train: Positions, teacher, val: Positions, val_teacher, head, args):
    t_logp_all, t_value_all = teacher
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(train.n)
    cursor = 0

    def next_rows():
        nonlocal order, cursor
        if cursor + args.batch > train.n:
            order, cursor = rng.permutation(train.n), 0
        rows = np.sort(order[cursor : cursor + args.batch])
        cursor += args.batch
        return rows

    start = time.perf_counter()
    with torch.no_grad():  # observers see real activations before any gradient
        for _ in range(args.warmup_batches):
            prepared(torch.from_numpy(train.planes(next_rows())))
    log = [{"step": 0, "s": round(time.perf_counter() - start, 1)}]
    set_observers(prepared, False)
    log[0].update(evaluate(prepared, val, *val_teacher, head, 512))
    set_observers(prepared, True)
    print(f"  step 0 (after {args.warmup_batches} observer batches): {log[0]}", flush=True)
    params = [p for p in prepared.parameters() if p.requires_grad]
    if args.optimizer == "adam":
        opt = torch.optim.Adam(params, lr=args.lr)
    else:
        opt = torch.optim.SGD(params, lr=args.lr, momentum=0.9, nesterov=True)
    observe_steps = int(args.observe_frac * args.steps)
    kls, mses = [], []
    step = 0
    train_start = time.perf_counter()
    for step in range(1, args.steps + 1):
        lr = args.lr * 0.5 * (1 + math.cos(math.pi * (step - 1) / args.steps))
        for group in opt.param_groups:
            group["lr"] = lr
        if step == observe_steps + 1:
            set_observers(prepared, False)
        rows = next_rows()
        policy, value = prepared(torch.from_numpy(train.planes(rows)))
        loss, kl, mse = distill_loss(
            policy,
            value,
            t_logp_all[rows],
            t_value_all[rows],
            torch.from_numpy(train.legal[rows]),
            torch.from_numpy(train.index[rows]),
            head,
            args.value_weight,
            args.temperature,
        )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        kls.append(kl.item())
        mses.append(mse.item())
        out_of_time = time.perf_counter() - train_start > args.max_minutes * 60
        if step % args.eval_every == 0 or step == args.steps or out_of_time:
            observing = step <= observe_steps
            set_observers(prepared, False)
            entry = {
                "step": step,
                "s": round(time.perf_counter() - start, 1),
                "lr": round(lr, 8),
                "train_kl": round(statistics.mean(kls[-args.eval_every :]), 5),
                "train_mse": round(statistics.mean(mses[-args.eval_every :]), 6),
                **evaluate(prepared, val, *val_teacher, head, 512),
            }
            set_observers(prepared, observing)
            log.append(entry)
            print(f"  {entry}", flush=True)
        if out_of_time:
            print(f"  time limit ({args.max_minutes} min) at step {step}", flush=True)
            break
    set_observers(prepared, False)
    return log, step, time.perf_counter() - train_start


def tuned_net(net, prepared):
    """The original net with the QAT model's trained parameters (same names; BN statistics
    and every other buffer unchanged)."""
    state = net.state_dict()
    trained = dict(prepared.named_parameters())
    missing = [k for k in trained if k not in state]
    if missing:
        raise RuntimeError(f"QAT parameters not in the net: {missing[:5]}")
    tuned = copy.deepcopy(net).float()
    tuned.load_state_dict({**state, **{k: v.detach().clone() for k, v in trained.items()}})
    return tuned.eval(), len(trained)


def ties(reference, other, inputs, clear: float = 0.1):
    """How much the top-1 disagreements matter: top-1 agreement where the reference's best
    legal move leads its second by at least ``clear`` logits, the share of positions that
    holds, and the reference's prior lost on average by playing the other's best move."""
    (pr, _), (po, _) = reference, other
    agree, clear_agree, clear_n, lost = [], 0, 0, 0.0
    for k, i in enumerate(inputs):
        ref, oth = pr[k, i.indices].astype(np.float64), po[k, i.indices]
        best, pick = int(np.argmax(ref)), int(np.argmax(oth))
        top2 = np.sort(ref)[-2:] if len(ref) > 1 else np.array([-np.inf, ref[0]])
        if top2[1] - top2[0] >= clear:
            clear_n += 1
            clear_agree += best == pick
        prior = np.exp(ref - ref.max())
        prior /= prior.sum()
        lost += prior[best] - prior[pick]
        agree.append(best == pick)
    return [
        ("top1_where_clear", round(clear_agree / max(clear_n, 1), 4)),
        ("clear_share", round(clear_n / len(inputs), 4)),
        ("prior_lost", round(lost / len(inputs), 5)),
    ]


def compiled_int8(converted, bf16: bool, example: np.ndarray):
    """The converted model compiled as runtimes.pt2e compiles its own."""
    import torch._inductor.config as inductor

    inductor.freezing = True
    compiled = torch.compile(converted)
    autocast = torch.autocast("cpu", torch.bfloat16, enabled=bf16)

    def call(x):
        planes = torch.from_numpy(x).contiguous(memory_format=torch.channels_last)
        with torch.no_grad(), autocast:
            return compiled(planes)

    start = time.perf_counter()
    call(example)
    return call, {"compile_s": round(time.perf_counter() - start, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("arch", choices=["small", "medium"])
    parser.add_argument("--games", type=Path, default=Path("/tmp/int8qat/sf"))
    parser.add_argument("--make-games", type=int, default=0, help="write N games if none")
    parser.add_argument("--games-seed", type=int, default=6464)
    parser.add_argument("--skip-plies", type=int, default=8, help="the random opening plies")
    parser.add_argument("--held", type=int, default=4000, help="held-out Stockfish positions")
    parser.add_argument("--calibration", type=int, default=512)
    parser.add_argument("--val", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    parser.add_argument("--value-weight", type=float, default=2.5)
    parser.add_argument("--temperature", type=float, default=1.0, help="of the policy KL")
    parser.add_argument("--observe-frac", type=float, default=0.5)
    parser.add_argument("--warmup-batches", type=int, default=32)
    parser.add_argument("--eval-every", type=int, default=250)
    parser.add_argument("--max-minutes", type=float, default=30.0, help="training time box")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--work", type=Path, default=None, help="default /tmp/int8qat/ARCH-TIME")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/int8qat/cache"))
    parser.add_argument("--load-qat", type=Path, default=None, help="a saved QAT state")
    parser.add_argument("--load-qat-steps", type=int, default=0, help="its steps, for the log")
    parser.add_argument("--no-log", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(rt.THREADS)
    torch.manual_seed(args.seed)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    work = args.work or Path(f"/tmp/int8qat/{args.arch}-{time.strftime('%H%M%S')}")
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()

    # positions
    if args.make_games and not glob.glob(str(args.games / "**/*.pgn"), recursive=True):
        make_games(args.games, args.make_games, args.games_seed)
    splits, sf_games = sf_positions(args.games, args.skip_plies)
    _, rt_held, rt_games, _ = rt.real_positions()  # runtimes.py's held-out set
    rng = random.Random(args.seed)
    seen: set = set()
    sets = {}
    for name, size in (("held", args.held), ("calib", args.calibration), ("val", args.val)):
        inputs = dedupe(splits[name], seen)
        rng.shuffle(inputs)
        sets[name] = inputs[:size]
    rt_held = dedupe(rt_held, seen)  # no position of runtimes' held-out set is trained on
    seen.update(i.key for name in ("held", "calib", "val") for i in splits[name])
    train_inputs = dedupe(splits["train"], seen)
    sizes = {k: len(v) for k, v in sets.items()} | {"train": len(train_inputs)}
    print(
        f"{sf_games} Stockfish games: {sizes}; runtimes' held-out: {len(rt_held)} positions "
        f"of {rt_games} games ({time.perf_counter() - t0:.0f} s)",
        flush=True,
    )
    train, val = Positions(train_inputs), Positions(sets["val"])
    del train_inputs, splits
    calib = rt.planes_of(sets["calib"])
    held_sets = {"sf": sets["held"], "results": rt_held}
    held_batches = {k: rt.padded_batches(rt.planes_of(v)) for k, v in held_sets.items()}

    # the reference and its outputs (the teacher)
    net, meta = load_net(resolve_net_path(args.arch))
    head = net.config.value_head
    candidates: dict[str, tuple] = {"bf16": rt.bf16_reference(net), "fp32": rt.fp32_eager(net)}
    start = time.perf_counter()
    cache = args.cache / f"teacher-{meta.net_id}-{train.n}-{val.n}-{args.seed}.npz"
    if cache.exists():  # scratch: the same net, games and split give the same outputs
        with np.load(cache) as saved:
            teacher = torch.from_numpy(saved["logp"]), torch.from_numpy(saved["value"])
            val_teacher = torch.from_numpy(saved["val_logp"]), torch.from_numpy(saved["val_value"])
    else:
        teacher = teacher_outputs(candidates["bf16"][0], train, head)
        val_teacher = teacher_outputs(candidates["bf16"][0], val, head)
        args.cache.mkdir(parents=True, exist_ok=True)
        np.savez(
            cache,
            logp=teacher[0].numpy(),
            value=teacher[1].numpy(),
            val_logp=val_teacher[0].numpy(),
            val_value=val_teacher[1].numpy(),
        )
    teacher_s = time.perf_counter() - start
    print(f"teacher outputs for {train.n + val.n} positions in {teacher_s:.0f} s", flush=True)

    # QAT
    start = time.perf_counter()
    prepared = prepare_qat(net, args.batch)
    prepare_s = time.perf_counter() - start
    print(f"QAT model prepared in {prepare_s:.1f} s; training ...", flush=True)
    if args.load_qat:  # a trained QAT model's state (scratch, safetensors): measure only
        from safetensors.torch import load_file

        prepared.load_state_dict(load_file(args.load_qat))
        set_observers(prepared, False)
        log, steps_done, train_s = [], int(args.load_qat_steps), 0.0
    else:
        log, steps_done, train_s = train_qat(prepared, train, teacher, val, val_teacher, head, args)
        from safetensors.torch import save_file

        state = {k: v.detach().clone() for k, v in prepared.state_dict().items()}
        save_file(state, str(work / f"{args.arch}-qat-state.safetensors"))
    print(f"trained {steps_done} steps in {train_s / 60:.1f} min", flush=True)

    # the tuned float weights, as a normal net file
    tuned, n_params = tuned_net(net, prepared)
    notes = (
        f"int8 QAT probe (benchmarks/int8/qat.py): {steps_done} steps, lr {args.lr}, "
        f"batch {args.batch}, value weight {args.value_weight}; not for shipping"
    )
    tuned_meta = NetMeta(
        architecture=net.config,
        training_step=meta.training_step + steps_done,
        parent=meta.net_id,
        notes=notes,
    )
    tuned_path = work / f"{args.arch}-qat-tuned.safetensors"
    save_net(tuned, tuned_path, tuned_meta)
    tuned, tuned_meta = load_net(tuned_path)
    print(f"tuned weights ({n_params} tensors) saved to {tuned_path}", flush=True)

    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e

    errors: dict[str, str] = {}
    builders = {
        "ptq-int8": lambda: rt.pt2e(net, calib, bf16=False),
        "ptq-int8-bf16": lambda: rt.pt2e(net, calib, bf16=True),
        "qat-int8": None,  # below: converts the QAT model (once; both variants)
        "qat-int8-bf16": None,
        "tuned-bf16": lambda: rt.bf16_reference(tuned),
        "tuned-ptq-int8": lambda: rt.pt2e(tuned, calib, bf16=False),
        "tuned-ptq-int8-bf16": lambda: rt.pt2e(tuned, calib, bf16=True),
    }
    converted = None
    for name, build in builders.items():
        print(f"building {name} ...", flush=True)
        try:
            if build is None:
                if converted is None:
                    start = time.perf_counter()
                    converted = convert_pt2e(
                        aligned_for_convert(prepared, torch.from_numpy(calib[:BATCH]))
                    )
                    convert_s = round(time.perf_counter() - start, 1)
                call, info = compiled_int8(converted, name.endswith("bf16"), calib[:BATCH])
                candidates[name] = (call, {"convert_s": convert_s, **info})
            else:
                candidates[name] = build()
            print(f"  {name}: {candidates[name][1]}", flush=True)
        except Exception as exc:
            import traceback

            traceback.print_exc()
            errors[name] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"

    # quality: every variant against the original bf16 (and the QAT ones against tuned bf16)
    results: dict[str, dict] = {}
    for name, (call, _) in list(candidates.items()):
        try:
            results[name] = {
                k: rt.outputs(call, held_batches[k], len(v), head) for k, v in held_sets.items()
            }
        except Exception as exc:
            errors[name] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"
            del candidates[name]

    # speed: interleaved rounds, as runtimes.py
    timing_batch = held_batches["results"][0]
    for call, _ in candidates.values():
        for _ in range(3):
            call(timing_batch)
    rates: dict[str, list[float]] = {name: [] for name in candidates}
    gflops = []
    for _ in range(args.rounds):
        gflops.append(matmul_gflops(torch.bfloat16, torch.device("cpu"), min_seconds=0.3))
        for name, (call, _) in candidates.items():
            time.sleep(0.05)
            rates[name].append(rate(lambda c=call: c(timing_batch), BATCH, args.seconds))

    common = {
        "date": stamp,
        "autogroup": rt.autogroup(),
        "load_average": os.getloadavg()[0],
        "arch": args.arch,
        "net_id": meta.net_id,
        "tuned_net_id": tuned_meta.net_id,
        "batch": BATCH,
        "threads": rt.THREADS,
        "rounds": args.rounds,
        "versions": rt.versions(),
        "bf16_matmul_gflops": round(statistics.median(gflops), 1),
        "games": sf_games,
        "positions": sizes,
        "held_out": {k: len(v) for k, v in held_sets.items()},
        "qat": {
            "steps": steps_done,
            "batch": args.batch,
            "lr": args.lr,
            "optimizer": args.optimizer,
            "value_weight": args.value_weight,
            "temperature": args.temperature,
            "observe_frac": args.observe_frac,
            "warmup_batches": args.warmup_batches,
            "train_min": round(train_s / 60, 1),
            "teacher_s": round(teacher_s),
            "log": log,
        },
    }
    rows = []
    for name, (_, info) in candidates.items():
        row = {
            **common,
            "variant": name,
            "positions_per_s": round(statistics.median(rates[name]), 1),
            "positions_per_s_rounds": [round(r) for r in rates[name]],
            "bf16_positions_per_s": round(statistics.median(rates["bf16"]), 1),
            "over_bf16": round(
                statistics.median(r / b for r, b in zip(rates[name], rates["bf16"])), 3
            ),
            **info,
        }
        for k, v in held_sets.items():
            top1, mae = rt.agreement(results["bf16"][k], results[name][k], v)
            row[f"{k}_top1_vs_bf16"], row[f"{k}_value_mae_vs_bf16"] = top1, mae
            row.update({f"{k}_{m}": x for m, x in ties(results["bf16"][k], results[name][k], v)})
            if "tuned-bf16" in results:
                top1, mae = rt.agreement(results["tuned-bf16"][k], results[name][k], v)
                row[f"{k}_top1_vs_tuned_bf16"], row[f"{k}_value_mae_vs_tuned_bf16"] = top1, mae
        rows.append(row)
    for name, error in errors.items():
        rows.append({**common, "variant": name, "error": error})

    print(
        f"\n{args.arch}: QAT {steps_done} steps ({train_s / 60:.1f} min), batch {BATCH}, "
        f"{rt.THREADS} threads, {args.rounds} rounds; held-out sf {len(held_sets['sf'])}, "
        f"results {len(held_sets['results'])}"
    )
    print(
        f"{'variant':20} {'pos/s':>7} {'bf16':>7} {'ratio':>6} {'sf top1':>8} {'sf MAE':>7} "
        f"{'res top1':>8} {'res MAE':>7} {'sf clear':>8} {'lost':>7}"
    )
    for row in rows:
        if "error" in row:
            print(f"{row['variant']:20} ERROR {row['error']}")
            continue
        print(
            f"{row['variant']:20} {row['positions_per_s']:7.0f} {row['bf16_positions_per_s']:7.0f}"
            f" {row['over_bf16']:6.2f} {row['sf_top1_vs_bf16']:8.2%}"
            f" {row['sf_value_mae_vs_bf16']:7.4f} {row['results_top1_vs_bf16']:8.2%}"
            f" {row['results_value_mae_vs_bf16']:7.4f} {row['sf_top1_where_clear']:8.2%}"
            f" {row['sf_prior_lost']:7.4f}"
        )
    if not args.no_log:
        with open(HERE / "qat.jsonl", "a") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
    print(f"total {(time.perf_counter() - t0) / 60:.1f} min", flush=True)


if __name__ == "__main__":
    sys.exit(main())
