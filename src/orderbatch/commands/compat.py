"""`orderbatch compat`: other people's SAM apps deployed with `local up` and run as their READMEs say."""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

# The public apps' manifest ships inside the package (orderbatch/compat/public_apps.yaml).
DEFAULT_MANIFESTS = (Path(__file__).resolve().parents[1] / "compat" / "public_apps.yaml",)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compat",
        help="deploy public SAM apps with `local up`, run each as its README says, print the pass rate",
    )
    parser.add_argument(
        "--manifest",
        type=Path,
        action="append",
        default=None,
        help="apps to run (default: the public apps shipped with orderbatch; repeat for more); an app's "
        "local paths are relative to its manifest's folder",
    )
    parser.add_argument(
        "--sources",
        type=Path,
        default=None,
        metavar="DIR",
        help="folder with clones of the apps' repositories (DIR/owner/name); each app is exported at its "
        "recorded commit",
    )
    parser.add_argument("--filter", default=None, help="only apps whose id contains this text")
    parser.add_argument(
        "--runtime-fallback",
        action="store_true",
        help="pass --runtime-fallback to local up: functions on a runtime this machine lacks, or that AWS no "
        "longer creates (python3.8), run on the tools' Python",
    )
    parser.add_argument("--jobs", type=int, default=1, help="apps run at once (each is a local cloud)")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON document")
    parser.add_argument(
        "--html",
        type=Path,
        metavar="FILE",
        help="also write a self-contained HTML report: every app, the rates, where each ended, the causes",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from orderbatch.compat.manifest import CompatApp, load_manifest
    from orderbatch.compat.report import render, summary, write_html
    from orderbatch.compat.runner import AppResult, run_app

    apps: list[tuple[CompatApp, Path]] = []
    for manifest in args.manifest or DEFAULT_MANIFESTS:
        apps += [
            (app, manifest.resolve().parent)
            for app in load_manifest(manifest)
            if not args.filter or args.filter in app.id
        ]
    if not apps:
        print("no app matches", file=sys.stderr)
        return 2

    def one(listed: tuple[CompatApp, Path]) -> AppResult:
        app, manifest_folder = listed
        extra = ("--runtime-fallback",) if args.runtime_fallback else ()
        result = run_app(app, sources=args.sources, local_root=manifest_folder, extra_up_args=extra)
        if not args.json:
            verdict = "passed" if result.ended_as_readme else f"{result.stage}: {result.cause[:160]}"
            print(f"{app.id}: {verdict} ({result.seconds:.0f} s)", file=sys.stderr, flush=True)
        return result

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(one, apps))
    if args.json:
        print(json.dumps({"summary": summary(results), "apps": [r.as_dict() for r in results]}, indent=2))
    else:
        print(render(results))
    if args.html:
        write_html(results, args.html, generated_at=datetime.now(UTC).isoformat(timespec="seconds"))
        print(f"HTML: {args.html}", file=sys.stderr)
    ran = [r for r in results if r.stage != "source"]
    return 0 if ran and all(r.ended_as_readme for r in ran) else 1
