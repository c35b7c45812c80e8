//! The device region a maker's uploads go to: allocated at create through
//! the device and freed at drop (owned), or lent by the caller (borrowed,
//! never freed); and where a generation's image sits in it.
use std::ffi::c_void;
use std::sync::Arc;

use super::super::align::align_up;
use super::device_kind;
use crate::device::Device;
use crate::{Error, ErrorKind, Result};

/// A region of device memory the caller lends the maker for its image: at
/// least the image's size, valid while the maker may copy into it or read
/// it back (until it is replaced or the maker dropped). The maker never
/// frees it.
#[derive(Clone, Copy, Debug)]
pub struct BorrowedImage {
    pub ptr: *mut c_void,
    pub len: usize,
}

/// The region the maker allocated itself, freed when it drops through the
/// device that allocated it (which a later `set_device` does not change).
struct OwnedImage {
    device: Arc<dyn Device>,
    ptr: *mut u8,
}

impl Drop for OwnedImage {
    fn drop(&mut self) {
        // SAFETY: the region came from this device's alloc and is freed
        // exactly once, here.
        unsafe { self.device.free(self.ptr) };
    }
}

/// Where a generation's image starts in a device region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// At the region's start.
    AtStart,
    /// At the first segment-aligned address at least `room` bytes past the
    /// region's start (the room holds the caller's frame before the image).
    AlignedAfter { room: u64 },
}

/// The region the uploads go to, and the room a region must have.
pub(crate) struct DeviceRegion {
    /// The region's start (NULL: none, for a generation that allows it).
    base: *mut u8,
    /// The region allocated at create (None for a maker that only borrows).
    owned: Option<OwnedImage>,
    /// Bytes a region must hold.
    need: u64,
    placement: Placement,
}

/// `b` if it can hold `need` bytes.
fn check_borrowed(b: BorrowedImage, need: u64) -> Result<*mut u8> {
    if b.ptr.is_null() {
        return Err(Error::invalid_argument("the borrowed device image is NULL"));
    }
    if (b.len as u64) < need {
        return Err(Error::invalid_argument(format!(
            "the borrowed device image has {} bytes; the image needs {need}",
            b.len
        )));
    }
    Ok(b.ptr.cast())
}

impl DeviceRegion {
    /// `borrowed` if it can hold `need` bytes, else a region of `need`
    /// bytes allocated through `device` (owned, freed at drop). A failed
    /// allocation is `NoMemory` (or `Unavailable` when the device says so).
    pub(crate) fn new(
        device: &Arc<dyn Device>,
        borrowed: Option<BorrowedImage>,
        need: u64,
        placement: Placement,
    ) -> Result<Self> {
        let (base, owned) = match borrowed {
            Some(b) => (check_borrowed(b, need)?, None),
            None => {
                let ptr = device.alloc(need as usize).map_err(|e| {
                    Error::new(
                        device_kind(&e, ErrorKind::NoMemory),
                        format!("device allocation of the {need}-byte image failed: {e}"),
                    )
                })?;
                let device = Arc::clone(device);
                (ptr, Some(OwnedImage { device, ptr }))
            }
        };
        Ok(DeviceRegion {
            base,
            owned,
            need,
            placement,
        })
    }

    /// No region yet (uploads name their destination until one is lent).
    pub(crate) fn none(need: u64, placement: Placement) -> Self {
        DeviceRegion {
            base: std::ptr::null_mut(),
            owned: None,
            need,
            placement,
        }
    }

    /// The region's start (NULL: none).
    pub(crate) fn base(&self) -> *mut u8 {
        self.base
    }

    /// Bytes a region must hold.
    pub(crate) fn need(&self) -> u64 {
        self.need
    }

    /// Where the image starts in the region (NULL: none).
    pub(crate) fn image(&self) -> *mut u8 {
        self.base.wrapping_add(self.image_offset())
    }

    /// Bytes from the region's start to the image's.
    pub(crate) fn image_offset(&self) -> usize {
        match self.placement {
            _ if self.base.is_null() => 0,
            Placement::AtStart => 0,
            Placement::AlignedAfter { room } => {
                let start = self.base as u64 + room;
                (align_up(start) - self.base as u64) as usize
            }
        }
    }

    /// Uses `image` (lent by the caller) from now on, or with None the
    /// region allocated at create. `InvalidArgument` for a NULL or too
    /// small region, or None without one of its own; nothing changes then.
    pub(crate) fn set(&mut self, image: Option<BorrowedImage>) -> Result<()> {
        self.base = match image {
            Some(b) => check_borrowed(b, self.need)?,
            None => match &self.owned {
                Some(o) => o.ptr,
                None => {
                    return Err(Error::invalid_argument(
                        "this maker has no device image of its own to return to",
                    ))
                }
            },
        };
        Ok(())
    }
}
