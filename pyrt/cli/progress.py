"""A tqdm progress bar over one epoch, showing the loss and the images per second."""

import sys

__all__ = ["ProgressBar"]

LOSS_EVERY = 50  # steps between loss read-outs: reading the loss each step would sync a GPU


class ProgressBar:
    """Counts images; shows the loss every LOSS_EVERY steps. Disabled (costing one branch per
    step) with ``enabled=False``, as for --json or when stderr is not a terminal."""

    def __init__(self, total_images, desc, enabled):
        self.bar = None
        self.steps = 0
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=total_images, desc=desc, unit="img", unit_scale=True,
                            leave=False, dynamic_ncols=True, file=sys.stderr)

    @staticmethod
    def wanted(json_output):
        return not json_output and sys.stderr.isatty()

    def update(self, images, loss):
        if self.bar is None:
            return
        self.steps += 1
        if self.steps % LOSS_EVERY == 1:
            self.bar.set_postfix(loss=f"{loss.item():.4f}", refresh=False)
        self.bar.update(images)

    def write(self, line):
        """Print `line` without breaking the bar."""
        if self.bar is None:
            print(line, flush=True)
        else:
            self.bar.write(line)

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None
