# A stand-in for the one piece of scikit-learn that Optuna 3.1's fANOVA importance evaluator uses:
# sklearn.ensemble.RandomForestRegressor and its trees' `tree_` arrays. Debian 12's python3-sklearn
# cannot be installed beside libboost1.81-dev (python3-scipy -> python3-pythran -> libboost1.74-dev,
# which conflicts), so bench/importance_vs_optuna.py puts this folder on sys.path when the real
# package is missing. Optuna's own code then does the variance decomposition; only the forest is
# fitted here (CART regression trees on bootstrap samples, sklearn's defaults: every feature
# considered at each split, squared-error reduction, midpoints as thresholds).
