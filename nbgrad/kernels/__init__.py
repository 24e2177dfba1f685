"""The op table's array kernels: functions of ``xp`` (NumPy or CuPy) and arrays, never Tensors.

One module per family, named as the file of the rows that call them in
:mod:`nbgrad.derivatives` (``kernels/pointwise.py`` holds the kernels of
``derivatives/pointwise.py``); ``common.py`` holds those that rows of several families share.
"""
