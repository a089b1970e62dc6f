"""``frugalzero net``: make and inspect network files."""

from __future__ import annotations

import argparse

from frugalzero.nn.shipped import NET_HELP


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("net", help="create or inspect network files")
    sub = parser.add_subparsers(dest="net_command", required=True, metavar="ACTION")

    new = sub.add_parser("new", help="write a freshly initialised network")
    new.add_argument("--arch", default="small")
    new.add_argument("--value-head", choices=["scalar", "wdl"], default="scalar")
    new.add_argument("--seed", type=int, default=0)
    new.add_argument("--notes", default="")
    new.add_argument("--out", required=True)
    new.set_defaults(handler=_new)

    info = sub.add_parser("info", help="show a network file's metadata (after verifying it)")
    info.add_argument("net", help=NET_HELP)
    info.add_argument("--json", action="store_true")
    info.set_defaults(handler=_info)

    export = sub.add_parser(
        "export",
        help="write a network as ONNX (planes in; policy logits and value/WDL out)",
        description="Export NET to ONNX with a dynamic batch (docs: frugalzero.nn.export), then "
        "run real positions and random planes through onnxruntime and PyTorch and report the "
        "largest differences. Needs the onnx extra: pip install 'frugalzero[onnx]'.",
    )
    export.add_argument("net", help=NET_HELP)
    export.add_argument("--onnx", required=True, metavar="OUT.onnx", help="the ONNX file")
    export.add_argument(
        "--check", type=int, default=1000, help="positions compared (half real, half random)"
    )
    export.add_argument("--json", action="store_true")
    export.set_defaults(handler=_export)


def _new(args: argparse.Namespace) -> int:
    import torch

    from frugalzero.nn.checkpoint import NetMeta, save_net
    from frugalzero.nn.config import architecture
    from frugalzero.nn.model import PolicyValueNet
    from frugalzero.runtime.files import check_destination

    check_destination(args.out)
    torch.manual_seed(args.seed)
    config = architecture(args.arch, value_head=args.value_head)
    meta = save_net(PolicyValueNet(config), args.out, NetMeta(config, notes=args.notes))
    print(f"wrote {args.out} ({args.arch}, net_id {meta.net_id})")
    return 0


def _info(args: argparse.Namespace) -> int:
    from frugalzero.nn.checkpoint import load_net
    from frugalzero.nn.shipped import resolve_net_path
    from frugalzero.output import emit

    path = resolve_net_path(args.net)
    net, meta = load_net(path)
    data = meta.to_json()
    data["path"] = str(path)
    data["parameters"] = sum(p.numel() for p in net.parameters())
    emit(data, args.json, title=str(path))
    return 0


def _export(args: argparse.Namespace) -> int:
    import numpy as np

    from frugalzero.chess.encoding import encode
    from frugalzero.chess.history import net_input_from_board
    from frugalzero.chess.positions import random_boards
    from frugalzero.nn.checkpoint import load_net
    from frugalzero.nn.evaluator import pack_inputs
    from frugalzero.nn.export import compare_with_torch, export_onnx
    from frugalzero.nn.shipped import resolve_net_path
    from frugalzero.output import emit
    from frugalzero.runtime.files import check_destination

    destination = check_destination(args.onnx)  # before the export, which takes a while
    path = resolve_net_path(args.net)
    net, meta = load_net(path)
    out = export_onnx(net, meta, destination)
    result: dict = {"net": str(path), "net_id": meta.net_id, "onnx": str(out)}
    result["bytes"] = out.stat().st_size
    if args.check > 0:
        real = args.check - args.check // 2
        frames, metas, _, _ = pack_inputs([net_input_from_board(b) for b in random_boards(real)])
        rng = np.random.default_rng(0)
        noise = rng.integers(0, 2, size=(args.check // 2, net.config.input_planes, 8, 8))
        for name, planes in (
            ("real", encode(frames, metas, net.config.history_fill)),
            ("random", noise),
        ):
            if len(planes):
                result[name] = compare_with_torch(net, out, planes.astype(np.float32))
    emit(result, args.json, title=f"export {path.name}")
    return 0
