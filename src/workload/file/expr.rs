//! Integer expressions of a workload file (`100000 * scale`,
//! `(row - 1) / 10 + 1`): numbers, named integers, `+ - * / %` and
//! parentheses, evaluated with 64-bit integers as pgbench does.

/// A parsed expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Num(i64),
    Name(String),
    Neg(Box<Expr>),
    Bin(Box<Expr>, char, Box<Expr>),
}

impl Expr {
    /// Parses `text`; the error names what is wrong.
    pub fn parse(text: &str) -> Result<Expr, String> {
        let tokens = tokenize(text)?;
        let mut p = Parser { tokens, at: 0 };
        let e = p.sum()?;
        match p.tokens.get(p.at) {
            None => Ok(e),
            Some(t) => Err(format!("unexpected '{t}' in expression '{text}'")),
        }
    }

    /// The names the expression reads.
    pub fn names(&self, out: &mut Vec<String>) {
        match self {
            Expr::Num(_) => {}
            Expr::Name(n) => out.push(n.clone()),
            Expr::Neg(e) => e.names(out),
            Expr::Bin(a, _, b) => {
                a.names(out);
                b.names(out);
            }
        }
    }

    /// The value, with `lookup` giving each name's value.
    pub fn eval(&self, lookup: &dyn Fn(&str) -> Option<i64>) -> Result<i64, String> {
        Ok(match self {
            Expr::Num(n) => *n,
            Expr::Name(n) => lookup(n).ok_or_else(|| format!("unknown name '{n}'"))?,
            Expr::Neg(e) => e.eval(lookup)?.wrapping_neg(),
            Expr::Bin(a, op, b) => {
                let (a, b) = (a.eval(lookup)?, b.eval(lookup)?);
                match op {
                    '+' => a.wrapping_add(b),
                    '-' => a.wrapping_sub(b),
                    '*' => a.wrapping_mul(b),
                    '/' | '%' if b == 0 => return Err("division by zero".into()),
                    '/' => a.wrapping_div(b),
                    _ => a.wrapping_rem(b),
                }
            }
        })
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Num(i64),
    Name(String),
    Op(char),
}

impl std::fmt::Display for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Token::Num(n) => write!(f, "{n}"),
            Token::Name(n) => write!(f, "{n}"),
            Token::Op(c) => write!(f, "{c}"),
        }
    }
}

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c.is_whitespace() {
            continue;
        }
        if c.is_ascii_digit() {
            let mut end = i + 1;
            while let Some(&(j, d)) = chars.peek() {
                if !(d.is_ascii_digit() || d == '_') {
                    break;
                }
                end = j + 1;
                chars.next();
            }
            let digits: String = text[i..end].chars().filter(|c| *c != '_').collect();
            let n = digits
                .parse()
                .map_err(|_| format!("number {digits} is out of range"))?;
            out.push(Token::Num(n));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let mut end = i + 1;
            while let Some(&(j, d)) = chars.peek() {
                if !(d.is_ascii_alphanumeric() || d == '_') {
                    break;
                }
                end = j + 1;
                chars.next();
            }
            out.push(Token::Name(text[i..end].to_string()));
        } else if "+-*/%()".contains(c) {
            out.push(Token::Op(c));
        } else {
            return Err(format!("unexpected '{c}' in expression '{text}'"));
        }
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek_op(&self) -> Option<char> {
        match self.tokens.get(self.at) {
            Some(Token::Op(c)) => Some(*c),
            _ => None,
        }
    }

    fn sum(&mut self) -> Result<Expr, String> {
        let mut e = self.product()?;
        while let Some(op @ ('+' | '-')) = self.peek_op() {
            self.at += 1;
            e = Expr::Bin(Box::new(e), op, Box::new(self.product()?));
        }
        Ok(e)
    }

    fn product(&mut self) -> Result<Expr, String> {
        let mut e = self.unary()?;
        while let Some(op @ ('*' | '/' | '%')) = self.peek_op() {
            self.at += 1;
            e = Expr::Bin(Box::new(e), op, Box::new(self.unary()?));
        }
        Ok(e)
    }

    fn unary(&mut self) -> Result<Expr, String> {
        let t = self.tokens.get(self.at).cloned();
        self.at += 1;
        match t {
            Some(Token::Num(n)) => Ok(Expr::Num(n)),
            Some(Token::Name(n)) => Ok(Expr::Name(n)),
            Some(Token::Op('-')) => Ok(Expr::Neg(Box::new(self.unary()?))),
            Some(Token::Op('(')) => {
                let e = self.sum()?;
                if self.peek_op() != Some(')') {
                    return Err("missing ')' in expression".into());
                }
                self.at += 1;
                Ok(e)
            }
            Some(t) => Err(format!("unexpected '{t}' in expression")),
            None => Err("expression ends too early".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(text: &str) -> Result<i64, String> {
        Expr::parse(text)?.eval(&|n| match n {
            "scale" => Some(3),
            "row" => Some(250_001),
            _ => None,
        })
    }

    #[test]
    fn arithmetic_follows_precedence_and_names() {
        assert_eq!(eval("100_000 * scale"), Ok(300_000));
        assert_eq!(eval("(row - 1) / 100000 + 1"), Ok(3));
        assert_eq!(eval("-5000 + 2 * (3 % 2)"), Ok(-4998));
    }

    #[test]
    fn bad_expressions_say_what_is_wrong() {
        assert!(eval("1 +").unwrap_err().contains("ends too early"));
        assert!(eval("(1").unwrap_err().contains("missing ')'"));
        assert!(eval("x * 2").unwrap_err().contains("unknown name 'x'"));
        assert!(eval("2 $ 3").unwrap_err().contains("unexpected '$'"));
    }
}
