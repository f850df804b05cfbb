"""pytest plugin (entry point `pytest11`): provides the `gradcheck` fixture.

srcxform is imported only when a test asks for the fixture, so the plugin costs nothing
in test sessions that do not use it.
"""

import pytest


@pytest.fixture
def gradcheck():
    """`gradcheck(f, args, **options)`: `srcxform.testing.check_grads(f, args, **options)`,
    the same arguments, failing the test with the table of mismatches when they disagree.

    Example:
        >>> def test_tanh(gradcheck):
        ...     gradcheck(lambda x: srcxform.tanh(x), (np.linspace(-1.0, 1.0, 5),), order=2)
    """
    from srcxform.testing.check import check_grads

    def run(f, args, **options):
        __tracebackhide__ = True
        try:
            check_grads(f, args, **options)
        except AssertionError as err:
            mismatch = str(err)
        else:
            return
        # Failed outside the except block: inside it, pytest would print the table twice
        # (the AssertionError, then "during handling of the above exception", the failure).
        pytest.fail(mismatch, pytrace=False)

    return run
