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
    import time

    from avta.progress import working
    pipe, terminal = io.StringIO(), _Terminal()
    for stream in (pipe, terminal):
        with working("building", stream=stream, tick=0.05) as bar:
            bar.set_postfix_str("verilating")
            time.sleep(0.3)
    assert pipe.getvalue() == ""
    drawn = terminal.getvalue()
    # The thread redrew the bar while the step ran: several frames, the elapsed time moving.
    assert drawn.count("building") >= 3 and "verilating" in drawn
