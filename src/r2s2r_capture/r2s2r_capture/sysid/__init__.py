"""System identification of the arm: recordings, the fit, effort correction and uncertainty."""
