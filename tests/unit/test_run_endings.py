"""How a log ends, and the run state it gives: end markers in the shapes trainers, launchers and
schedulers print them, and the state from them, the planned total and the log's age."""

import pytest

from tuiloss.core.analysis.state import CLOCK_SLACK, STOPPED_AFTER, planned_steps, reached_plan, run_state
from tuiloss.core.formats.endings import last_stamp
from tuiloss.core.formats.stdout import PatternParser, TextParser

NANOGPT = "".join(f"iter {i}: loss {3 - i / 100:.4f}, time 210.00ms, mfu 30.00%\n" for i in range(0, 100, 10))


def ending_after(*chunks, parser=None):
    parser = parser or TextParser()
    line = 1
    batch = None
    for chunk in chunks:
        data = chunk.encode()
        batch = parser.feed(data, line)
        line += data.count(b"\n")
    return batch.meta["end"]


@pytest.mark.parametrize(
    "tail, kind, reason",
    [
        ("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    step()\n"
         "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n", "crashed", "CUDA out of memory"),
        ("Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
         "RuntimeError: shape '[4, -1]' is invalid for input of size 7\n", "crashed",
         "RuntimeError: shape '[4, -1]' is invalid for input of size 7"),
        ("[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout: "
         "WorkNCCL(SeqNum=9, OpType=ALLREDUCE) ran for 1800000 milliseconds before timing out.\n"
         "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 41 closing signal SIGTERM\n"
         "Fatal Python error: Aborted\n", "crashed", "NCCL timeout"),
        ("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\nKeyboardInterrupt\n",
         "killed", "KeyboardInterrupt"),
        ("torch.distributed.elastic.multiprocessing.api.SignalException: Process 9724 got signal: 15\n", "killed", "SIGTERM"),
        ("slurmstepd: error: *** JOB 4242 ON gpu-12 CANCELLED AT 2024-03-01T10:00:00 DUE TO TIME LIMIT ***\n",
         "killed", "time limit"),
        ("slurmstepd: error: *** STEP 4242.0 ON gpu-12 CANCELLED AT 2024-03-01T10:00:00 ***\n", "killed", "cancelled"),
        ("/var/spool/slurmd/job42/slurm_script: line 14: 94460 Killed                  python train.py\n",
         "killed", "killed"),
        ("Killed\n", "killed", "killed"),
        ("TERM_RUNLIMIT: job killed after reaching LSF run time limit.\nExited with exit code 140.\n", "killed", "time limit"),
        ("Segmentation fault (core dumped)\n", "crashed", "segmentation fault"),
        ("saving checkpoint to out\n[INFO] [launch.py:460:main] Process 73581 exits successfully.\n", "finished",
         "the trainer's final summary"),
        ("{'train_runtime': 4233.1, 'train_samples_per_second': 9.4, 'train_loss': 0.51, 'epoch': 3.0}\n"
         "***** train metrics *****\n  epoch                    =        3.0\n  train_loss               =     0.5100\n",
         "finished", "the trainer's final summary"),
        ("`Trainer.fit` stopped: `max_steps=100` reached.\n", "finished", "the trainer's final summary"),
        ("Epoch 26: early stopping\nRestoring model weights from the end of the best epoch: 16.\n", "finished",
         "early stopping"),
        ("[2022-04-08 21:30:47][fairseq_cli.train][INFO] - done training in 8123.4 seconds\n", "finished",
         "the trainer's final summary"),
        ("[12/01 10:20:00 d2.engine.hooks]: Overall training speed: 4998 iterations in 0:33:20 (0.4002 s / it)\n"
         "[12/01 10:20:00 d2.engine.hooks]: Total training time: 0:34:00 (0:00:40 on hooks)\n", "finished",
         "the trainer's final summary"),
        ("\n300 epochs completed in 12.345 hours.\n", "finished", "the trainer's final summary"),
        ("Training time 1 day, 2:03:04\n", "finished", "the trainer's final summary"),
    ],
)
def test_a_log_ending_in_a_marker_says_how_it_ended(tail, kind, reason):
    end = ending_after(NANOGPT + tail)
    assert (end.kind, end.reason) == (kind, reason)


def test_a_marker_training_went_on_after_is_not_the_end():
    warning = "Traceback (most recent call last):\n  File \"loader.py\", line 1\nOSError: image file is truncated\n"
    assert ending_after(NANOGPT + warning + NANOGPT) is None
    # nor when the training goes on in a later chunk
    assert ending_after(NANOGPT + warning, NANOGPT) is None
    # and the end is read again when it comes
    assert ending_after(NANOGPT + warning, NANOGPT, "Killed\n").kind == "killed"


def test_the_end_is_kept_across_chunks_and_the_most_telling_marker_names_it():
    end = ending_after(NANOGPT + "Traceback (most recent call last):\n", "  File \"x.py\"\n",
                       "torch.OutOfMemoryError: CUDA out of memory.\n", "wandb: Synced 5 W&B file(s)\n")
    assert (end.kind, end.reason) == ("crashed", "CUDA out of memory")


def test_words_in_generated_text_are_no_marker():
    sample = "rank 0 sample 1: Hello, I'm a language model, and the knight Killed the dragon at step 3\n"
    assert ending_after(NANOGPT + sample) is None


def test_a_restart_forgets_the_end():
    parser = TextParser()
    assert ending_after(NANOGPT + "Killed\n", parser=parser).kind == "killed"
    parser.restart()
    assert ending_after(NANOGPT, parser=parser) is None


def test_a_users_pattern_reads_the_end_too():
    parser = PatternParser(r"^it (?P<step>\d+) l=(?P<loss>\S+)$")
    assert ending_after("it 1 l=2.0\nit 2 l=1.5\nKeyboardInterrupt\n", parser=parser).kind == "killed"
    assert ending_after("it 3 l=1.4\n", parser=parser) is None


def test_only_the_end_of_a_big_chunk_is_searched():
    big = NANOGPT * 3000  # well over the 256 KB searched at the end of a chunk
    early = "Traceback (most recent call last):\nValueError: early\n"
    assert ending_after(early + big) is None
    assert ending_after(big + "Killed\n").kind == "killed"


def test_planned_total_and_reaching_it():
    assert planned_steps(None, {"max_steps": 5000}) == 5000
    assert planned_steps(None, {"trainer": {"max_steps": 200}}) == 200
    assert planned_steps(None, {"max_steps": -1}) is None  # HF: epochs plan the run instead
    assert planned_steps(300.0, {"max_steps": 5000}) == 300  # what the log announced wins
    assert reached_plan(100_000, 100_000) and reached_plan(100_000, 99_999, spacing=100)
    assert not reached_plan(100_000, 99_900, spacing=100)  # a logging interval short: not there
    assert not reached_plan(4, 500)  # went past its "total": that counted something else


def test_state_vocabulary():
    assert run_state(ending=("crashed", "CUDA out of memory"), silence=1.0).state == "crashed"
    assert run_state(planned=100, last_step=100, silence=1.0).state == "finished"
    assert run_state(silence=10.0).state == "running"
    assert run_state(silence=5000.0).state == "stopped"
    assert run_state(silence=700.0, interval=10.0).state == "stalled"
    assert run_state(silence=None).state == "stopped"
    assert run_state(has_points=False).state == "waiting"
    assert run_state(has_points=False, unread=True).state == "unread"
    assert run_state(deleted=True, ending=("finished", "")).state == "deleted"


def test_the_last_time_a_log_printed():
    text = (b"[2024-05-08 04:08:04,516 INFO] Step 1600/100000; acc: 98.80; xent: 0.05\n"
            b"2024/05/08 04:09:10 saving\n[2022-04-08T21:30:47][train][INFO] - {\"epoch\": 10}\n")
    assert last_stamp(text) == 1649453447.0  # the last one: 2022-04-08 21:30:47 UTC
    assert last_stamp(b"iter 10: loss 2.0, time 210.00ms\n") is None
    assert last_stamp(b"id 2024-13-45 99:99:99\n") is None
    batch = TextParser().feed(text, 1)
    assert batch.meta["stamped"] == 1649453447.0


def test_a_log_silent_by_its_own_clock_is_stopped_however_new_the_file():
    long_ago = CLOCK_SLACK + STOPPED_AFTER + 3600
    assert run_state(silence=5.0, logged_silence=long_ago).state == "stopped"
    assert run_state(silence=5.0, logged_silence=CLOCK_SLACK).state == "running"  # a clock in another zone
    assert run_state(silence=5.0, logged_silence=long_ago, ending=("killed", "SIGTERM")).state == "killed"
    assert run_state(silence=5.0, logged_silence=long_ago, planned=10, last_step=10).state == "finished"
