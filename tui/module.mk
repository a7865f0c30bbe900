# The console module: model, event store, axis helpers, Chrome trace writer,
# XSpace writer and window statistics export, the curses console (app,
# panels, timeline), replay/export, the demo and the headless recorder.
# `dptop` is tui/main.c.
tui_SRCS := tui/axis.c tui/store.c tui/model.c tui/chrome.c tui/app.c tui/panels.c \
            tui/timeline.c tui/replay.c tui/demo.c tui/record.c tui/recq.c \
            tui/xplane.c tui/winexport.c tui/import.c tui/import_kineto.c tui/import_rocprof.c \
            tui/import_xplane.c tui/coll.c tui/perfetto.c
PROGRAMS += dptop
dptop_SRCS := tui/main.c
