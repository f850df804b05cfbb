"""The seed documents' snippets, copied in so that a clone checks them without ../shared.

Each test is one snippet of shared/seeds/seed_snippets.py with `import srcxform as tf` in
place of TensorFlow; where a snippet prints, the test compares what it printed, line for
line, with what TensorFlow prints (written in below).
"""

import srcxform as tf


def _printed_lines(capsys):
    return capsys.readouterr().out.splitlines()


def test_seed000_gradient_of_reduce_sum():
    x = tf.ones((2, 2))
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.reduce_sum(x)
        z = tf.multiply(y, y)
    # Derivative of z with respect to the original input tensor x
    dz_dx = t.gradient(z, x)
    for i in [0, 1]:
        for j in [0, 1]:
            assert dz_dx[i][j].numpy() == 8.0


def test_seed000_gradient_wrt_intermediate():
    x = tf.ones((2, 2))
    with tf.GradientTape() as t:
        t.watch(x)
        y = tf.reduce_sum(x)
        z = tf.multiply(y, y)
    dz_dy = t.gradient(z, y)
    assert dz_dy.numpy() == 8.0


def test_seed000_persistent_tape():
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x
        z = y * y
    dz_dx = t.gradient(z, x)  # 108.0 (4*x^3 at x = 3)
    dy_dx = t.gradient(y, x)  # 6.0
    assert dz_dx.numpy() == 108.0
    assert dy_dx.numpy() == 6.0
    del t  # Drop the reference to the tape


def test_seed000_control_flow():
    def f(x, y):
        output = 1.0
        for i in range(y):
            if i > 1 and i < 5:
                output = tf.multiply(output, x)
        return output

    def grad(x, y):
        with tf.GradientTape() as t:
            t.watch(x)
            out = f(x, y)
        return t.gradient(out, x)

    x = tf.convert_to_tensor(2.0)
    assert grad(x, 6).numpy() == 12.0
    assert grad(x, 5).numpy() == 12.0
    assert grad(x, 4).numpy() == 4.0


def test_seed000_higher_order():
    x = tf.Variable(1.0)  # Create a Tensorflow variable initialized to 1.0
    with tf.GradientTape() as t:
        with tf.GradientTape() as t2:
            y = x * x * x
        # Compute the gradient inside the 't' context manager
        # which means the gradient computation is differentiable as well.
        dy_dx = t2.gradient(y, x)
    d2y_dx2 = t.gradient(dy_dx, x)
    assert dy_dx.numpy() == 3.0
    assert d2y_dx2.numpy() == 6.0


def test_seed003_simple_gradient(capsys):
    x = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = x * x
    grad = tape.gradient(y, x)
    print(f'Result of y: {y}')
    print(f'The gradient of y with respect to x is: {grad.numpy()}')
    assert _printed_lines(capsys) == [
        "Result of y: 9.0",
        "The gradient of y with respect to x is: 6.0",
    ]
    assert y.numpy() == 9.0 and grad.numpy() == 6.0


def test_seed003_several_partial_derivatives(capsys):
    x = tf.Variable(tf.fill((2, 3), 3.0))
    z = tf.Variable(5.0)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(x * x + 2 * z)
    grad = tape.gradient(y, [x, z])
    print(f'Result of y: {y}')
    print(f"The gradient of y with respect to x is:\n{grad[0].numpy()}")
    print(f"The gradient of y with respect to z is: {grad[1].numpy()}")
    assert _printed_lines(capsys) == [
        "Result of y: 114.0",
        "The gradient of y with respect to x is:",
        "[[6. 6. 6.]",
        " [6. 6. 6.]]",
        "The gradient of y with respect to z is: 12.0",
    ]
    assert x.dtype == tf.float32 and y.dtype == tf.float32 and grad[0].dtype == tf.float32
    assert grad[0].shape == (2, 3) and (grad[0].numpy() == 6.0).all()
    assert grad[1].numpy() == 12.0


def test_seed003_task_quadratic():
    # f(x) = x^2 + 2x - 1, derivative at x = 2 (floating point only)
    x = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        f = x ** 2 + 2 * x - 1
    assert tape.gradient(f, x).numpy() == 6.0
