# The console module.  First version: the headless --record mode only; the
# console, --replay and --export come with their own sources.
tui_SRCS := tui/record.c
PROGRAMS += dptop
dptop_SRCS := tui/main.c
