"""Progress bars show on a terminal only: logs and pipes get the results alone."""

import io

from avta.progress import progress


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_bar_on_a_terminal_and_nothing_in_a_pipe():
    pipe, terminal = io.StringIO(), _Terminal()
    for stream in (pipe, terminal):
        with progress(3, "work", stream=stream) as bar:
            for _ in range(3):
                bar.update()
    assert pipe.getvalue() == ""
    assert "work:" in terminal.getvalue() and "/3 [" in terminal.getvalue()   # a bar was drawn


def test_working_shows_the_elapsed_time_on_a_terminal_only():
    """The thread redraws the bar while the step runs: the test waits for three redraws (with a
    generous limit) instead of sleeping a fixed time, so a slow machine cannot fail it."""
    import threading

    from avta.progress import working

    class _Counting(_Terminal):
        def __init__(self):
            super().__init__()
            self.frames, self.enough = 0, threading.Event()

        def write(self, text):
            self.frames += "building" in text
            if self.frames >= 4:
                self.enough.set()
            return super().write(text)

    pipe, terminal = io.StringIO(), _Counting()
    with working("building", stream=pipe, tick=0.01):
        pass
    assert pipe.getvalue() == ""
    with working("building", stream=terminal, tick=0.01) as bar:
        bar.set_postfix_str("verilating")
        assert terminal.enough.wait(timeout=30), "the bar was not redrawn"
    assert "verilating" in terminal.getvalue()
