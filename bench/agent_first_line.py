"""The program both sides of bench_agent.py start: its first line is the wall-clock
time (ns) at which it runs, then it exits 0. Standard library only, nothing imported
beyond what the interpreter loads anyway, so both sides pay the same start-up."""

import time

print(time.time_ns(), flush=True)
