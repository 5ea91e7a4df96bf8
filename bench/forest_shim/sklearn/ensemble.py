# RandomForestRegressor as Optuna's fANOVA calls it; see __init__.py.
import numpy


class _Tree:
    """The arrays of sklearn.tree._tree.Tree that optuna.importance._fanova._tree reads."""

    def __init__(self, n_features):
        self.n_features = n_features
        self.children_left, self.children_right, self.feature, self.threshold, self.value = [], [], [], [], []

    def _add(self):
        self.children_left.append(-1)
        self.children_right.append(-1)
        self.feature.append(-2)
        self.threshold.append(-2.0)
        self.value.append(0.0)
        return len(self.feature) - 1

    def freeze(self):
        self.node_count = len(self.feature)
        self.children_left = numpy.array(self.children_left)
        self.children_right = numpy.array(self.children_right)
        self.feature = numpy.array(self.feature)
        self.threshold = numpy.array(self.threshold, dtype=float)
        self.value = numpy.array(self.value, dtype=float).reshape(-1, 1, 1)


def _best_split(X, y, min_samples_leaf):
    best = None  # (sse, feature, threshold)
    n = len(y)
    for f in range(X.shape[1]):
        order = numpy.argsort(X[:, f], kind="stable")
        xs, ys = X[order, f], y[order]
        csum, csq = numpy.cumsum(ys), numpy.cumsum(ys * ys)
        total, total_sq = csum[-1], csq[-1]
        for i in range(min_samples_leaf, n - min_samples_leaf + 1):
            if xs[i - 1] == xs[i]:
                continue
            left_n, right_n = i, n - i
            sse = (csq[i - 1] - csum[i - 1] ** 2 / left_n) + (
                (total_sq - csq[i - 1]) - (total - csum[i - 1]) ** 2 / right_n)
            if best is None or sse < best[0] - 1e-12:
                best = (sse, f, (xs[i - 1] + xs[i]) / 2)
    return best


class _Estimator:
    def __init__(self, X, y, max_depth, min_samples_split, min_samples_leaf):
        self.tree_ = _Tree(X.shape[1])
        self._grow(X, y, 0, max_depth, min_samples_split, min_samples_leaf)
        self.tree_.freeze()

    def _grow(self, X, y, depth, max_depth, min_samples_split, min_samples_leaf):
        node = self.tree_._add()
        self.tree_.value[node] = float(numpy.mean(y))
        if depth >= max_depth or len(y) < min_samples_split or numpy.all(y == y[0]):
            return node
        split = _best_split(X, y, min_samples_leaf)
        if split is None:
            return node
        _, f, t = split
        mask = X[:, f] <= t
        self.tree_.feature[node] = f
        self.tree_.threshold[node] = t
        self.tree_.children_left[node] = self._grow(X[mask], y[mask], depth + 1, max_depth, min_samples_split,
                                                    min_samples_leaf)
        self.tree_.children_right[node] = self._grow(X[~mask], y[~mask], depth + 1, max_depth, min_samples_split,
                                                     min_samples_leaf)
        return node


class RandomForestRegressor:
    def __init__(self, n_estimators=100, max_depth=None, min_samples_split=2, min_samples_leaf=1, random_state=None):
        self.n_estimators = n_estimators
        self.max_depth = max_depth if max_depth is not None else 1 << 30
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.random_state = random_state

    def fit(self, X, y):
        X, y = numpy.asarray(X, dtype=float), numpy.asarray(y, dtype=float)
        rng = numpy.random.RandomState(self.random_state)
        n = len(y)
        self.estimators_ = []
        for _ in range(self.n_estimators):
            idx = rng.randint(0, n, n)  # bootstrap sample, as sklearn's default
            self.estimators_.append(
                _Estimator(X[idx], y[idx], self.max_depth, self.min_samples_split, self.min_samples_leaf))
        return self
