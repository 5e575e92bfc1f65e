"""torch.lobpcg: a few extreme eigenpairs of a symmetric (generalized) eigenproblem by LOBPCG iterations.

The iterations are the worker class `LOBPCG` (method "ortho", the default, or "basic"); `lobpcg` is the
front that checks the arguments, runs one worker per matrix of a batch and, when `A` requires grad, records
the whole solve as one custom Function node (LOBPCGAutogradFunctionBackward), as torch does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _creation as C
from . import _dtype as D
from . import linalg
from ._tensor import Tensor
from .autograd.function import Function
from .ops.shape import cat, stack

# The machine epsilon torch's lobpcg takes the default tolerance from (tol = eps ** 0.5).
_EPS = {D.float32: 1.2e-07, D.float64: 2.23e-16}


def _apply(M: Tensor | None, X: Tensor) -> Tensor:
    """M @ X, where a missing M (B or iK not given) stands for the identity."""
    return X if M is None else M.matmul(X)


def _qform(M: Tensor | None, S: Tensor) -> Tensor:
    """The quadratic form S^T M S (M None: the identity)."""
    return S.mT.matmul(_apply(M, S))


def _eigh(M: Tensor, largest: bool) -> tuple[Tensor, Tensor]:
    """Eigenpairs of the symmetric M, in descending order of eigenvalue when `largest`, else ascending."""
    E, Z = linalg.eigh(M, UPLO="U")
    return (E.flip(-1), Z.flip(-1)) if largest else (E, Z)


def _floating_dtype(A: Tensor) -> D.dtype:
    """The dtype the iterations run in: A's floating dtype, float32 for anything else."""
    return A.dtype if A.dtype in (D.float16, D.float32, D.float64) else D.float32


# Note [lobpcg backward]
# torch differentiates lobpcg as a partial symmetric eigendecomposition A U = U diag(D) of the standard
# problem (B = I; real, dense A). With G_D, G_U the incoming gradients and F[i, j] = 1 / (D[j] - D[i]) off the
# diagonal (0 on it), the part of A's gradient inside span(U) is the one of a full eigendecomposition,
#     U (diag(G_D) + (U^T G_U) * F) U^T.
# When U has fewer columns than A, each eigenvector also moves out of span(U): du_j = -(A - D[j] I)^+ dA u_j,
# the pseudo-inverse taken on the orthogonal complement of span(U). Transposed, that adds
#     -sum_j Y (Y^T (A - D[j] I) Y)^{-1} Y^T G_U[:, j] u_j^T
# for any basis Y of the complement (the product does not depend on which basis: Y = (I - U U^T) N with a
# fixed random N, as torch also takes one). The k small solves run as one batched linalg.solve. Every step
# is a differentiable retrograd op, so the gradient can be differentiated again (gradgradcheck); its value is
# torch's, which solves the same Sylvester equation through a characteristic polynomial instead.
_COMPLEMENT_SEED = 0


def _symeig_backward(D_grad: Tensor, U_grad: Tensor, A: Tensor, Dv: Tensor, U: Tensor) -> Tensor:
    """A's gradient from those of the eigenvalues Dv and eigenvectors U of the symmetric A (Note [lobpcg backward])."""
    m, k = U.shape[-2], U.shape[-1]
    Ut = U.mT
    off_diagonal = 1 - C.eye(k, dtype=Dv.dtype)
    gaps = Dv.unsqueeze(-2) - Dv.unsqueeze(-1)
    inverse_gaps = off_diagonal / (gaps + C.eye(k, dtype=Dv.dtype))
    grad = U.matmul((D_grad.diag_embed() + Ut.matmul(U_grad) * inverse_gaps).matmul(Ut))
    if k == m:
        return grad
    noise = C.randn((*A.shape[:-1], m - k), dtype=A.dtype, generator=C.Generator().manual_seed(_COMPLEMENT_SEED))
    Y = noise - U.matmul(Ut.matmul(noise))
    Yt = Y.mT
    YtAY, YtY = Yt.matmul(A.matmul(Y)), Yt.matmul(Y)
    shifted = YtAY.unsqueeze(-3) - Dv[..., :, None, None] * YtY.unsqueeze(-3)  # (..., k, m - k, m - k)
    Z = linalg.solve(shifted, Yt.matmul(U_grad).mT.unsqueeze(-1)).squeeze(-1).mT  # (..., m - k, k)
    return grad - Y.matmul(Z).matmul(Ut)


class LOBPCGAutogradFunction(Function):
    """lobpcg as one graph node; backward for the standard problem only (Note [lobpcg backward])."""

    @staticmethod
    def forward(ctx: Any, A: Tensor, k: int | None = None, B: Tensor | None = None, X: Tensor | None = None,
                n: int | None = None, iK: Tensor | None = None, niter: int | None = None, tol: float | None = None,
                largest: bool | None = None, method: str | None = None, tracker: Callable | None = None,
                ortho_iparams: dict | None = None, ortho_fparams: dict | None = None,
                ortho_bparams: dict | None = None) -> tuple[Tensor, Tensor]:
        A = A.contiguous()
        B = None if B is None else B.contiguous()
        E, U = _lobpcg(A, k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams, ortho_fparams,
                       ortho_bparams)
        ctx.save_for_backward(A, B, E, U)
        return E, U

    @staticmethod
    def backward(ctx: Any, E_grad: Tensor, U_grad: Tensor) -> tuple:
        A, B, E, U = ctx.saved_tensors
        if A.is_complex() or (B is not None and B.is_complex()):
            raise ValueError("lobpcg.backward does not support complex input yet. "
                             "Note that lobpcg.forward does though.")
        if B is not None:
            raise ValueError("lobpcg.backward does not support backward with B != I yet.")
        return (_symeig_backward(E_grad, U_grad, A, E, U),) + (None,) * 13


def lobpcg(A: Tensor, k: int | None = None, B: Tensor | None = None, X: Tensor | None = None, n: int | None = None,
           iK: Tensor | None = None, niter: int | None = None, tol: float | None = None, largest: bool | None = None,
           method: str | None = None, tracker: Callable | None = None, ortho_iparams: dict | None = None,
           ortho_fparams: dict | None = None, ortho_bparams: dict | None = None) -> tuple[Tensor, Tensor]:
    """The k largest (or smallest) eigenpairs of A X = B X diag(E), A and B symmetric, B positive definite.

    Returns E of shape (*, k) and X of shape (*, m, k); X (m, n) is the initial guess (random when not given),
    B and iK (a preconditioner) default to the identity. When A requires grad it is symmetrized first,
    (A + A^T) / 2, so its gradient is symmetric too.

    >>> A = torch.diag(torch.arange(1., 10.))
    >>> torch.lobpcg(A, k=2)[0]
    tensor([9.0000, 8.0000])
    """
    if A.requires_grad or (B is not None and B.requires_grad):
        A_sym = (A + A.mT) / 2
        B_sym = None if B is None else (B + B.mT) / 2
        return LOBPCGAutogradFunction.apply(A_sym, k, B_sym, X, n, iK, niter, tol, largest, method, tracker,
                                            ortho_iparams, ortho_fparams, ortho_bparams)
    return _lobpcg(A, k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams, ortho_fparams,
                   ortho_bparams)


def _lobpcg(A: Tensor, k: int | None, B: Tensor | None, X: Tensor | None, n: int | None, iK: Tensor | None,
            niter: int | None, tol: float | None, largest: bool | None, method: str | None,
            tracker: Callable | None, ortho_iparams: dict | None, ortho_fparams: dict | None,
            ortho_bparams: dict | None) -> tuple[Tensor, Tensor]:
    """Check the arguments, fill in the defaults and run one worker per matrix of A's batch."""
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and A.shape != B.shape:
        raise AssertionError(f"A and B must have same shape, got {A.shape} vs {B.shape}")
    dtype = _floating_dtype(A)
    tol = _EPS[dtype] ** 0.5 if tol is None else tol
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) is smaller than "
                         f"3 x the number of requested eigenpairs (={n})")
    method = "ortho" if method is None else method
    iparams = {"m": m, "n": n, "k": k, "niter": 1000 if niter is None else niter}
    fparams = {"tol": tol}
    bparams = {"largest": True if largest is None else largest}
    if method == "ortho":
        iparams.update(ortho_iparams or {})
        fparams.update(ortho_fparams or {})
        bparams.update(ortho_bparams or {})
        iparams.setdefault("ortho_i_max", 3)
        iparams.setdefault("ortho_j_max", 3)
        for name in ("ortho_tol", "ortho_tol_drop", "ortho_tol_replace"):
            fparams.setdefault(name, tol)
        bparams.setdefault("ortho_use_drop", False)
    batch = A.shape[:-2]
    As = A.reshape(-1, m, m)
    Bs = None if B is None else B.reshape(-1, m, m)
    Xs = None if X is None else X.reshape(As.shape[0], *X.shape[-2:])
    eigenvalues, eigenvectors = [], []
    for i in range(As.shape[0]):
        X_i = C.randn((m, n), dtype=dtype) if Xs is None else Xs[i].clone()
        if tuple(X_i.shape) != (m, n):
            raise AssertionError(f"X shape mismatch: got {X_i.shape}, expected {(m, n)}")
        if batch:
            iparams["batch_index"] = i
        worker = LOBPCG(As[i], None if Bs is None else Bs[i], X_i, iK, iparams, fparams, bparams, method, tracker)
        worker.run()
        eigenvalues.append(worker.E[:k])
        eigenvectors.append(worker.X[:, :k])
    if not batch:
        return eigenvalues[0], eigenvectors[0]
    return stack(eigenvalues).reshape(*batch, k), stack(eigenvectors).reshape(*batch, m, k)


class LOBPCG:
    """One LOBPCG solve: its parameters and iteration state, under torch's names, for a `tracker` to read.

    `iparams`, `fparams`, `bparams` hold the integer, float and boolean parameters, `ivars`, `fvars`, `bvars`,
    `tvars` the iteration variables (`ivars["istep"]`, `ivars["converged_count"]`, `tvars["rerr"]`, ...);
    `X` and `E` are the current eigenpair approximations, `R` the residual and `S` the search basis
    [X, P, W] (P: the previous search direction, W: the preconditioned residual). A tracker that sets
    `bvars["force_stop"] = True` stops the iterations.
    """

    def __init__(self, A: Tensor, B: Tensor | None, X: Tensor, iK: Tensor | None, iparams: dict, fparams: dict,
                 bparams: dict, method: str, tracker: Callable | None) -> None:
        self.A, self.B, self.iK = A, B, iK
        self.iparams, self.fparams, self.bparams = iparams, fparams, bparams
        self.method, self.tracker = method, tracker
        m, n = iparams["m"], iparams["n"]
        self.X = X
        self.E = C.zeros((n,), dtype=X.dtype)
        self.R = C.zeros((m, n), dtype=X.dtype)
        self.S = C.zeros((m, 3 * n), dtype=X.dtype)
        self.tvars: dict[str, Tensor] = {}
        self.ivars: dict[str, int] = {"istep": 0}
        self.fvars: dict[str, float] = {"_": 0.0}
        self.bvars: dict[str, bool] = {"_": False}

    def run(self) -> None:
        """Iterate until k eigenpairs have converged, niter steps were taken, or the tracker stops it."""
        self.update()
        while not self.stop_iteration():
            self.update()

    def update(self) -> None:
        """One step: the norms on the first, then a Rayleigh-Ritz step of the chosen method; then the tracker."""
        if self.ivars["istep"] == 0:
            X_norm = float(self.X.norm())
            self.fvars["X_norm"] = X_norm
            self.fvars["A_norm"] = float(_apply(self.A, self.X).norm()) / X_norm
            self.fvars["B_norm"] = float(_apply(self.B, self.X).norm()) / X_norm
            self.ivars["iterations_left"] = self.iparams["niter"]
            self.ivars["converged_count"] = 0
            self.ivars["converged_end"] = 0
        if self.method == "ortho":
            self._update_ortho()
        else:
            self._update_basic()
        self.ivars["iterations_left"] -= 1
        self.ivars["istep"] += 1
        if self.tracker is not None:
            self.tracker(self)

    def update_residual(self) -> None:
        """R = A X - B X diag(E)."""
        self.R = _apply(self.A, self.X) - _apply(self.B, self.X) * self.E

    def update_converged_count(self) -> int:
        """Count the leading eigenpairs whose backward-stable relative residual is under tol (Duersch et al.
        2018, Sec. 4.3); later pairs count only once all earlier ones have converged."""
        previous = self.ivars["converged_count"]
        A_norm, B_norm = self.fvars["A_norm"], self.fvars["B_norm"]
        rerr = self.R.norm(2, (0,)) / (self.X.norm(2, (0,)) * (A_norm + self.E[:self.X.shape[-1]].abs() * B_norm))
        count = 0
        for converged in (rerr < self.fparams["tol"]).tolist():
            if not converged:
                break
            count += 1
        if count < previous:
            raise AssertionError(f"the number of converged eigenpairs (was {previous}, got {count}) cannot decrease")
        self.ivars["converged_count"] = count
        self.tvars["rerr"] = rerr
        return count

    def stop_iteration(self) -> bool:
        """True when forced by the tracker, out of iterations, or k eigenpairs have converged."""
        return (self.bvars.get("force_stop", False) or self.ivars["iterations_left"] == 0
                or self.ivars["converged_count"] >= self.iparams["k"])

    def _first_rayleigh_ritz(self, largest: bool) -> Tensor:
        """The first step of both methods: Rayleigh-Ritz on the initial X; the search direction P starts empty."""
        Ri = self._rayleigh_ritz_transform(self.X)
        E, Z = _eigh(_qform(_qform(self.A, self.X), Ri), largest)
        self.X = self.X.matmul(Ri.matmul(Z))
        self.E = E
        return self.X[:, :0]

    def _update_basic(self) -> None:
        """A step of Knyazev's LOBPCG: Rayleigh-Ritz on the unconverged part of S, B-orthonormalized by Cholesky."""
        n, largest = self.iparams["n"], self.bparams["largest"]
        if self.ivars["istep"] == 0:
            P = self._first_rayleigh_ritz(largest)
        else:
            nc, ns = self.ivars["converged_count"], self.ivars["converged_end"]
            S_ = self.S[:, nc:ns]
            Ri = self._rayleigh_ritz_transform(S_)
            E_, Z = _eigh(_qform(_qform(self.A, S_), Ri), largest)
            self.X[:, nc:] = S_.matmul(Ri.matmul(Z[:, :n - nc]))
            self.E[nc:] = E_[:n - nc]
            P = S_.matmul(Ri.matmul(Z[:, n:2 * n - nc]))
        self.update_residual()
        self.update_converged_count()
        self._fill_search_basis(P, _apply(self.iK, self._unconverged_residual()))

    def _update_ortho(self) -> None:
        """A step of LOBPCG with an orthonormal search basis (Stathopoulos and Wu 2002): S is kept orthonormal
        by `_get_ortho`, so Rayleigh-Ritz needs no Cholesky factor."""
        n, largest = self.iparams["n"], self.bparams["largest"]
        if self.ivars["istep"] == 0:
            P = self._first_rayleigh_ritz(largest)
        else:
            nc, ns = self.ivars["converged_count"], self.ivars["converged_end"]
            S_ = self.S[:, nc:ns]
            E_, Z = _eigh(_qform(self.A, S_), largest)
            self.X[:, nc:] = S_.matmul(Z[:, :n - nc])
            self.E[nc:] = E_[:n - nc]
            # the new search direction: the part of the new X outside the old X's span, orthonormalized
            P = S_.matmul(Z[:, n - nc:].matmul(linalg.qr(Z[:n - nc, n - nc:].mT).Q))
        self.update_residual()
        self.update_converged_count()
        self._fill_search_basis(P, self._get_ortho(self._unconverged_residual(), cat((self.X, P), -1)))

    def _unconverged_residual(self) -> Tensor:
        """The residual columns the next search directions come from: all of them on the first step (as
        torch), else those of the eigenpairs not converged yet."""
        return self.R if self.ivars["istep"] == 0 else self.R[:, self.ivars["converged_count"]:]

    def _fill_search_basis(self, P: Tensor, W: Tensor) -> None:
        """S = [X, P, W]; the columns past them are unused, and the next step's basis ends at converged_end."""
        n, np = self.iparams["n"], P.shape[-1]
        self.S[:, :n] = self.X
        self.S[:, n:n + np] = P
        end = self.ivars["converged_end"] = n + np + W.shape[-1]
        self.S[:, n + np:end] = W

    def _rayleigh_ritz_transform(self, S: Tensor) -> Tensor:
        """Ri with Ri^T (S^T B S) Ri = I, upper triangular: Ri = diag(d) R^-1 where R^T R = d S^T B S d and
        d = diag(S^T B S)^-1/2 (the scaling keeps the Cholesky factorization well conditioned)."""
        SBS = _qform(self.B, S)
        d = SBS.diagonal(0, -2, -1) ** -0.5
        R = linalg.cholesky(SBS * d * d.unsqueeze(-1), upper=True)
        return linalg.solve_triangular(R, d.diag_embed(), upper=True, left=False)

    def _get_svqb(self, U: Tensor, drop: bool, tau: float) -> Tensor:
        """U's columns made B-orthonormal (Algorithm 4 of Duersch's thesis, 2015) through an eigendecomposition
        of the scaled U^T B U; with `drop`, directions whose eigenvalue is under tau * max |eigenvalue| are
        dropped, else their eigenvalues are raised to that floor. Columns with U^T B U zero on the diagonal
        are dropped first."""
        if U.numel() == 0:
            return U
        UBU = _qform(self.B, U)
        d = UBU.diagonal(0, -2, -1)
        nonzero = (d != 0).nonzero().flatten()
        if nonzero.numel() < d.numel():
            U = U[:, nonzero]
            if U.numel() == 0:
                return U
            UBU = _qform(self.B, U)
            d = UBU.diagonal(0, -2, -1)
        scale = d ** -0.5
        E, Z = _eigh(UBU * scale * scale.unsqueeze(-1), largest=False)
        floor = tau * float(E.abs().max())
        if drop:
            keep = (E > floor).nonzero().flatten()
            E, Z = E[keep], Z[:, keep]
        else:
            E = E.clamp(min=floor)
        return (U * scale).matmul(Z * E ** -0.5)

    def _get_ortho(self, U: Tensor, V: Tensor) -> Tensor:
        """U's columns made B-orthonormal and B-orthogonal to the B-orthonormal V (Algorithm 3 of Duersch's
        thesis; Algorithm 6, which may drop columns, when bparams["ortho_use_drop"]); repeated projections
        and svqb passes until the relative errors fall under ortho_tol. Empty when U lies in V's span."""
        m, i_max, j_max = self.iparams["m"], self.iparams["ortho_i_max"], self.iparams["ortho_j_max"]
        tol, tol_drop, tol_replace = (self.fparams[name] for name in ("ortho_tol", "ortho_tol_drop",
                                                                      "ortho_tol_replace"))
        use_drop = self.bparams["ortho_use_drop"]
        for key in [key for key in self.fvars if key.startswith("ortho_") and key.endswith("_rerr")]:
            del self.fvars[key]
        BV_norm = float(_apply(self.B, V).norm())
        VBU = V.mT.matmul(_apply(self.B, U))
        i = j = 0
        for i in range(i_max):
            U = U - V.matmul(VBU)
            drop, tau = False, tol_drop
            for j in range(j_max):
                if use_drop:
                    U = self._get_svqb(U, drop, tau)
                    drop, tau = True, tol_replace
                else:
                    U = self._get_svqb(U, False, tol_replace)
                if U.numel() == 0:
                    self.ivars["ortho_i"], self.ivars["ortho_j"] = i, j
                    return U
                BU = _apply(self.B, U)
                UBU = U.mT.matmul(BU)
                identity_error = float((UBU - C.eye(UBU.shape[-1], dtype=UBU.dtype)).norm())
                rerr = identity_error / (float(BU.norm()) * float(U.norm()))
                self.fvars[f"ortho_UBUmI_rerr[{i}, {j}]"] = rerr
                if rerr < tol:
                    break
            VBU = V.mT.matmul(BU)
            rerr = float(VBU.norm()) / (BV_norm * float(U.norm()))
            self.fvars[f"ortho_VBU_rerr[{i}]"] = rerr
            if rerr < tol:
                break
            if m < U.shape[-1] + V.shape[-1]:
                B_columns = m if self.B is None else self.B.shape[-1]
                raise ValueError(f"Overdetermined shape of U: #B-cols(={B_columns}) >= #U-cols(={U.shape[-1]}) + "
                                 f"#V-cols(={V.shape[-1]}) must hold")
        self.ivars["ortho_i"], self.ivars["ortho_j"] = i, j
        return U
