"""The one poll-with-a-deadline loop the tests use instead of sleeps."""
import time


def poll(predicate, timeout, interval=0.02, what="condition"):
    """Return predicate()'s first true value; raise AssertionError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.1f s waiting for %s" % (timeout, what))
        time.sleep(interval)


def holds_within(predicate, timeout, interval=0.02):
    """True once predicate() is true, False if it is still false after `timeout` seconds."""
    try:
        poll(predicate, timeout, interval)
        return True
    except AssertionError:
        return False
