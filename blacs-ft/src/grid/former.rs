//! The grid before a shrink, as the survivors play it while its data move
//! onto the new grid: each of its positions is played by the survivor that
//! holds its data ([`ShrunkFrom::holders`]), a lost one by a survivor of
//! its process row that rebuilds it there. Point-to-point messages only,
//! over [`Grid::survivors`]; a message between two positions one process
//! plays goes through a [`Mailbox`] (posted by the first, taken by the
//! second, which runs after it), never through MPI, so a send scope never
//! waits for a receive that the same process has yet to post.

use super::*;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

/// Messages between positions of a former grid that one process plays.
#[derive(Debug, Default)]
pub struct Mailbox {
    letters: RefCell<VecDeque<Letter>>,
}

#[derive(Debug)]
struct Letter {
    to: i32,
    from: i32,
    tag: i32,
    bytes: Vec<u8>,
}

impl Mailbox {
    /// Messages posted and not taken (a position's part that was not
    /// played; none once every position's part ran).
    pub fn pending(&self) -> usize {
        self.letters.borrow().len()
    }

    fn post<T: Element>(&self, to: i32, from: i32, tag: i32, buf: &[T]) {
        // SAFETY: `Element` types are plain numbers (f64, i64, u8): their
        // bytes are initialised and any copy of them is valid.
        let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), std::mem::size_of_val(buf)) };
        self.letters.borrow_mut().push_back(Letter { to, from, tag, bytes: bytes.to_vec() });
    }

    /// The oldest letter to `to` from `from` with `tag`, into `buf`: the
    /// number of elements it held.
    fn take<T: Element>(&self, to: i32, from: i32, tag: i32, buf: &mut [T]) -> Result<usize> {
        let mut letters = self.letters.borrow_mut();
        let at = letters.iter().position(|l| (l.to, l.from, l.tag) == (to, from, tag)).ok_or_else(|| {
            Error::Unrecoverable {
                reason: format!("position {to} of the grid before the shrink expected a message from position {from}"),
            }
        })?;
        let letter = letters.remove(at).expect("found above");
        let size = std::mem::size_of::<T>();
        let n = (letter.bytes.len() / size).min(buf.len());
        // SAFETY: `buf` holds at least `n` elements, the letter at least
        // `n * size` bytes, and any bytes are a valid `Element`.
        unsafe { std::ptr::copy_nonoverlapping(letter.bytes.as_ptr(), buf.as_mut_ptr().cast::<u8>(), n * size) };
        Ok(letter.bytes.len() / size)
    }
}

/// How a former grid's positions are reached.
#[derive(Debug)]
pub(crate) struct Route {
    /// By position: the rank in the survivors' communicator of the
    /// process that plays it.
    holders: Vec<i32>,
    /// This process's rank there.
    me: i32,
    mailbox: Rc<Mailbox>,
}

impl Grid {
    /// Local: position `position` of the grid `from` describes (the grid
    /// before a shrink), as this process plays it: a grid of that shape
    /// whose rank is `position`, for the point-to-point messages
    /// ([`Grid::send`], [`Grid::recv`], [`Grid::with_sends`]) of moving its
    /// data, over [`Grid::survivors`]. Every process passes the same
    /// `mailbox` to all the positions it plays, and plays a position that
    /// receives from another of its own after that one has sent.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when this process does not hold
    /// `position`'s data; [`Error::Unrecoverable`] when a position's data
    /// have no holder (its whole process row was lost).
    pub fn former_position(&self, from: &ShrunkFrom, position: i32, mailbox: &Rc<Mailbox>) -> Result<Grid> {
        let me = self.universe.comm.rank();
        let mut holders = Vec::with_capacity(from.holders.len());
        for (g, h) in from.holders.iter().enumerate() {
            holders.push(h.ok_or_else(|| Error::Unrecoverable {
                reason: format!(
                    "grid rank {g} of the {} grid before the shrink was lost with every other process of its row",
                    from.shape
                ),
            })?);
        }
        if holders.get(position as usize) != Some(&me) {
            return Err(Error::invalid("position", format!("this process does not hold position {position}'s data")));
        }
        Ok(Grid {
            p: from.shape.p,
            q: from.shape.q,
            rank: position,
            all: self.universe.comm.borrowed(),
            row: Comm::null(),
            col: Comm::null(),
            universe: self.universe.husk(),
            ulfm: self.ulfm,
            launch: self.launch.clone(),
            injector: self.injector.clone(),
            replacement: None,
            repairs: Vec::new(),
            pending_error: None,
            newcomer: false,
            tolerated_per_row: None,
            placement: self.placement,
            start_nodes: Vec::new(),
            agreements: std::cell::Cell::new(0),
            plan: self.plan,
            demoted: false,
            holds_data: true,
            route: Some(Route { holders, me, mailbox: Rc::clone(mailbox) }),
        })
    }

    /// Where a message to or from (`row`, `col`) goes: a rank of the grid
    /// communicator, or `None` for a position this process also plays
    /// (a former grid's, see [`Grid::former_position`]).
    pub(crate) fn peer(&self, row: i32, col: i32) -> Result<Option<i32>> {
        self.check_coords(row, col)?;
        let position = self.rank_of(row, col);
        Ok(match &self.route {
            None => Some(position),
            Some(r) => {
                let holder = r.holders[position as usize];
                (holder != r.me).then_some(holder)
            }
        })
    }

    /// Posts a message to a position this process also plays.
    pub(crate) fn post<T: Element>(&self, buf: &[T], row: i32, col: i32, tag: i32) {
        if let Some(r) = &self.route {
            r.mailbox.post(self.rank_of(row, col), self.rank, tag, buf);
        }
    }

    /// Takes a message from a position this process also plays.
    pub(crate) fn take<T: Element>(&self, buf: &mut [T], row: i32, col: i32, tag: i32) -> Result<usize> {
        match &self.route {
            Some(r) => r.mailbox.take(self.rank, self.rank_of(row, col), tag, buf),
            None => Err(Error::Unrecoverable { reason: "a message to itself outside a former grid".into() }),
        }
    }
}
