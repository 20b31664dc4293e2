"""Tar shards of PNG samples with labels, as seedloader-pack writes them: each
sample's members KEY.cls (its label) and KEY.png together, KEY its index
zero-padded to nine digits."""
import io
import tarfile

import numpy as np
from PIL import Image


def write_png_shard(path, first, count, rng, shape):
    """Writes samples first..first+count-1 to the ustar file `path`: label key % 3,
    random pixels of shape(key) (height, width, 3) drawn from `rng`."""
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
        for key in range(first, first + count):
            png = io.BytesIO()
            Image.fromarray(rng.integers(0, 256, shape(key), dtype=np.uint8)).save(
                png, format="PNG")
            for ext, data in (("cls", str(key % 3).encode()), ("png", png.getvalue())):
                info = tarfile.TarInfo("%09d.%s" % (key, ext))
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
