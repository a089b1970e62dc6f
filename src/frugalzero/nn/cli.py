"""``frugalzero net``: make and inspect network files."""

from __future__ import annotations

import argparse


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
    info.add_argument("net", help="path, or 'default' for the shipped net")
    info.add_argument("--json", action="store_true")
    info.set_defaults(handler=_info)


def _new(args: argparse.Namespace) -> int:
    import torch

    from frugalzero.nn.checkpoint import NetMeta, save_net
    from frugalzero.nn.model import PolicyValueNet, architecture

    torch.manual_seed(args.seed)
    config = architecture(args.arch, value_head=args.value_head)
    meta = save_net(PolicyValueNet(config), args.out, NetMeta(config, notes=args.notes))
    print(f"wrote {args.out} ({args.arch}, net_id {meta.net_id})")
    return 0


def _info(args: argparse.Namespace) -> int:
    from frugalzero.nn.checkpoint import load_net, resolve_net_path
    from frugalzero.report import emit

    path = resolve_net_path(args.net)
    net, meta = load_net(path)
    data = meta.to_json()
    data["path"] = str(path)
    data["parameters"] = sum(p.numel() for p in net.parameters())
    emit(data, args.json, title=str(path))
    return 0
