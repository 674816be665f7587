"""What a lesson's cell shows and waits for: a figure as an image with its words, model time let pass
on the notebook's store, and a long run started in the background while the lesson goes on."""

from __future__ import annotations

from ...view.picture import Picture, picture
from ...store.clock import to_ms
from .session import backend


def show(drawing, dpi: int = 80) -> Picture:
    """A static figure (a Drawing, or a matplotlib Figure) as an image for the notebook, with its
    caption as the text a reader without images gets (the site's alt text, a screen reader's)."""
    return picture(drawing, dpi)


def wait(seconds: float) -> None:
    """Let `seconds` of model time pass on the current store's clock (instant on the virtual clock)."""
    clock = backend().clock
    clock.run(until=clock.now_ms + to_ms(seconds))


# -- the libraries lessons: the tools learners ship ---------------------------------------------------------
def in_background(function, *args, **kwargs):
    """Start `function(*args, **kwargs)` in a thread now and go on; `.result()` waits for it (and raises what it
    raised). For a library's runs that take long on the library's own clock (RQ waits a minute before it calls
    a job abandoned) while the lesson goes on. The runs start their own servers and processes and stop them;
    if the kernel exits first, every server and process they started is stopped with it."""
    import threading
    from concurrent.futures import Future

    future: Future = Future()

    def work() -> None:
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(function(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - handed to whoever asks for the result
                future.set_exception(exc)

    threading.Thread(target=work, name="emqlab-background", daemon=True).start()
    return future
