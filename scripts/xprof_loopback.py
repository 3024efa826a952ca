"""Runs xprof's standalone web UI on loopback only.

xprof's own launcher binds every interface and starts a gRPC worker for
distributed processing; this one serves the same UI and converters from
127.0.0.1 alone, for looking at devprof's output on this machine:

    .venv/bin/python scripts/xprof_loopback.py --logdir DIR [--port 8791] [--capture]

--capture shows the CAPTURE PROFILE button (its route, /capture_profile,
captures a profile server such as devprof's profileserver into DIR); it is
hidden by default because a plain look at files needs no capture.
"""

import argparse
import sys

from xprof import server


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logdir", required=True)
    ap.add_argument("--port", type=int, default=8791)
    ap.add_argument("--capture", action="store_true", help="show the CAPTURE PROFILE button")
    args = ap.parse_args()
    logdir = server.get_abs_path(args.logdir)
    context = server.TBContext(logdir, server.DataProvider(logdir), server.TBContext.Flags(False))
    context.hide_capture_profile_button = not args.capture
    context.enable_tab_name_label = False
    context.src_prefix = None
    plugin = server.ProfilePluginLoader().load(context)
    server.run_server(plugin, "127.0.0.1", args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
