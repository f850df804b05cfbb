"""A short tour of srcxform's eager face: TensorFlow's GradientTape, backed by NumPy.

Every snippet is TensorFlow code with one change, the import line. Run it with
`python examples/quickstart.py`.
"""

import numpy as np

import srcxform as tf

# ----- 1. The gradient of reduce_sum -----
# A tape records the operations on the tensors it watches.
x = tf.ones((2, 2))
with tf.GradientTape() as t:
    t.watch(x)
    y = tf.reduce_sum(x)
    z = tf.multiply(y, y)
dz_dx = t.gradient(z, x)  # z = (sum x)^2, so dz/dx = 2 * sum(x) = 8 everywhere
print("dz/dx =", dz_dx.numpy().tolist())
assert all(dz_dx[i][j].numpy() == 8.0 for i in [0, 1] for j in [0, 1])

# ----- 2. The gradient with respect to an intermediate value -----
x = tf.ones((2, 2))
with tf.GradientTape() as t:
    t.watch(x)
    y = tf.reduce_sum(x)
    z = tf.multiply(y, y)
dz_dy = t.gradient(z, y)  # 2 * y = 8
print("dz/dy =", dz_dy.numpy())
assert dz_dy.numpy() == 8.0

# ----- 3. A persistent tape answers several gradient() calls -----
x = tf.constant(3.0)
with tf.GradientTape(persistent=True) as t:
    t.watch(x)
    y = x * x
    z = y * y
dz_dx = t.gradient(z, x)  # 108.0 (4*x^3 at x = 3)
dy_dx = t.gradient(y, x)  # 6.0
print("dz/dx =", dz_dx.numpy(), " dy/dx =", dy_dx.numpy())
assert dz_dx.numpy() == 108.0 and dy_dx.numpy() == 6.0
del t  # drop the reference to the tape


# ----- 4. Python control flow is simply recorded as it runs -----
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
print("d/dx of x^3, x^3, x^2 at 2:", [float(grad(x, n)) for n in (6, 5, 4)])
assert grad(x, 6).numpy() == 12.0
assert grad(x, 5).numpy() == 12.0
assert grad(x, 4).numpy() == 4.0

# ----- 5. Higher order: a tape records the gradient computed inside it -----
x = tf.Variable(1.0)  # trainable Variables are watched without t.watch
with tf.GradientTape() as t:
    with tf.GradientTape() as t2:
        y = x * x * x
    dy_dx = t2.gradient(y, x)  # computed inside t, so differentiable by t
d2y_dx2 = t.gradient(dy_dx, x)
print("dy/dx =", dy_dx.numpy(), " d2y/dx2 =", d2y_dx2.numpy())
assert dy_dx.numpy() == 3.0 and d2y_dx2.numpy() == 6.0

# ----- 6. Variables, and several sources at once -----
x = tf.Variable(3.0)
with tf.GradientTape() as tape:
    y = x * x
grad = tape.gradient(y, x)
print(f'Result of y: {y}')
print(f'The gradient of y with respect to x is: {grad.numpy()}')

x = tf.Variable(tf.fill((2, 3), 3.0))
z = tf.Variable(5.0)
with tf.GradientTape() as tape:
    y = tf.reduce_sum(x * x + 2 * z)
grad = tape.gradient(y, [x, z])  # a list of sources gives a list of gradients
print(f'Result of y: {y}')
print(f"The gradient of y with respect to x is:\n{grad[0].numpy()}")
print(f"The gradient of y with respect to z is: {grad[1].numpy()}")

x = tf.Variable(2.0)  # f(x) = x^2 + 2x - 1, so f'(2) = 6
with tf.GradientTape() as tape:
    f = x ** 2 + 2 * x - 1
print("f'(2) =", tape.gradient(f, x).numpy())

# ----- 7. Plain NumPy code is differentiable too -----
# NumPy functions applied to tensors run srcxform's ops, so this logistic-regression
# loss, written for NumPy arrays, trains unchanged on Variables.


def loss_fn(w, b, X, y):
    p = 1.0 / (1.0 + np.exp(-(np.dot(X, w) + b)))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


rng = np.random.default_rng(0)
X = rng.normal(size=(100, 3))
labels = (X @ np.array([1.0, -2.0, 0.5]) > 0).astype(np.float64)
w, b = tf.Variable(np.zeros(3)), tf.Variable(np.float64(0.0))
for step in range(101):
    with tf.GradientTape() as tape:
        loss = loss_fn(w, b, X, labels)
    dw, db = tape.gradient(loss, [w, b])
    w.assign_sub(1.0 * dw)
    b.assign_sub(1.0 * db)
    if step % 50 == 0:
        print(f"step {step:3d}: loss {loss:.4f}")
# The same function still runs on plain arrays, where NumPy computes it as usual.
print(f"trained loss, by NumPy on plain arrays: {loss_fn(w.numpy(), b.numpy(), X, labels):.4f}")

# ----- 8. The same code, compiled -----
# @tf.differentiable traces the function (the NumPy-written loss above, too) into one
# fused forward-and-adjoint function, compiled with Numba; later calls run the kernel,
# for any number of rows.
compiled_loss = tf.differentiable(loss_fn, wrt=(0, 1))
w0, b0 = np.zeros(3), 0.0
value, (dw, db) = compiled_loss.value_and_grad(w0, b0, X, labels)
print(f"compiled: loss {value:.4f}, d/db {db:.4f}")
print("the generated source begins:")
print("\n".join(compiled_loss.source(w0, b0, X, labels).splitlines()[5:14]))
